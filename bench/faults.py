"""`python -m bench.faults [--json]`: kill the renderer's failure domains in the middle of a batch and time the recovery.

For each fault (Playwright's driver SIGKILLed, a Chromium SIGKILLed, the renderer processes of one Chromium
SIGKILLed, the renderer processes of one Chromium SIGSTOPped), a 2 x 2 pool renders a batch of four small paintings,
one a slot, and the fault strikes once every render has its sketch in its page. The table says how many renders got
a verdict other than their own (an innocent zero), how many raised RendererUnavailable (a dead letter), how long
after the fault the last render of the batch had its verdict, how long the batch took against the same batch without a
fault, and whether the pool was whole after it (a fresh render paints; no Chromium process left stopped). The
fault-injection tests (tests/renderers/test_failure_domains.py) assert the same with the same helpers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any


def painting(index: int, circles: int = 12) -> str:
    """A small painting that takes a second or two: `circles` discs placed by `index`."""
    colours = ["#b0305a", "#305ab0", "#5ab030", "#c08020"]
    discs = "\n".join(
        f'  brush.fill("{colours[k % 4]}", 200); '
        f"brush.circle({60 + (k * 97 + index * 31) % 480}, {60 + (k * 57 + index * 13) % 480}, "
        f"{20 + (k * 7 + index) % 40}, 0.3);"
        for k in range(circles)
    )
    return (
        "function setup() {\n  createCanvas(600, 600, WEBGL);\n  translate(-300, -300);\n"
        f'  background("#f6f0e4");\n  brush.noStroke();\n{discs}\n}}\n'
    )


def _processes() -> dict[int, tuple[int, bytes, str]]:
    """pid -> (parent pid, command line, state) of every process this user can read."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            found[int(stat.parent.name)] = (int(fields[1]), (stat.parent / "cmdline").read_bytes(), fields[0])
        except (OSError, ValueError, IndexError):
            continue
    return found


def _under(root: int, processes: dict[int, tuple[int, bytes, str]]) -> set[int]:
    mine, grown = {root}, True
    while grown:
        more = {pid for pid, (parent, _, _) in processes.items() if parent in mine} - mine
        grown, mine = bool(more), mine | more
    return mine - {root}


def driver_pid(pool: Any) -> int:
    """The pid of the pool's Playwright driver (the Node process)."""
    return pool._driver.manager._client._transport._proc.pid


def browser_pid(pool: Any, index: int) -> int:
    """The pid of the pool's `index`-th Chromium: its main process, not a helper (`--type=...`)."""
    processes = _processes()
    mains = sorted(
        pid
        for pid in _under(driver_pid(pool), processes)
        if b"chromium" in processes[pid][1] and b"--type=" not in processes[pid][1]
    )
    launched = [pid for pid in mains if processes[pid][0] not in mains]  # the outermost of the wrapper's execs
    return launched[index]


def renderer_pids(pool: Any, index: int) -> list[int]:
    """The renderer processes of the pool's `index`-th Chromium."""
    processes = _processes()
    return [pid for pid in _under(browser_pid(pool, index), processes) if b"--type=renderer" in processes[pid][1]]


def chromium_left_stopped() -> list[int]:
    """Chromium processes of this one's that are stopped (state T): a stopped renderer outliving its browser."""
    processes = _processes()
    return [pid for pid in _under(os.getpid(), processes) if processes[pid][2] == "T"]


def chromium_count() -> int:
    processes = _processes()
    return sum(b"chromium" in processes[pid][1] for pid in _under(os.getpid(), processes))


def send(pids: list[int], signal_number: int) -> None:
    for pid in pids:
        with suppress(ProcessLookupError):  # a spare renderer that exited meanwhile
            os.kill(pid, signal_number)


FAULTS: dict[str, Callable[[Any], None]] = {
    "driver killed": lambda pool: send([driver_pid(pool)], signal.SIGKILL),
    "browser killed": lambda pool: send([browser_pid(pool, 0)], signal.SIGKILL),
    "renderers killed": lambda pool: send(renderer_pids(pool, 0), signal.SIGKILL),
    "renderers stopped": lambda pool: send(renderer_pids(pool, 0), signal.SIGSTOP),
}


async def all_mounted(pool: Any, slots: list[Any]) -> None:
    """Wait until every one of `slots` has the current render's sketch in its page."""
    while not all(slot.mounted and slot.renders for slot in slots):
        await asyncio.sleep(0.02)


def free_slots(pool: Any) -> list[Any]:
    return [slot for _, slot in list(pool._free._queue) if slot is not None]


async def batch_with_fault(pool: Any, sketches: list[str], fault: Callable[[Any], None] | None) -> dict:
    """Render `sketches` at once (one a slot), strike `fault` when every sketch is in its page; what came back."""
    from renderers import RendererUnavailable

    slots = free_slots(pool)
    for slot in slots:
        slot.mounted = False
    started = time.perf_counter()
    jobs = [asyncio.ensure_future(pool.render(source)) for source in sketches]
    struck = None
    if fault is not None:
        await asyncio.wait_for(all_mounted(pool, slots), timeout=60)
        fault(pool)
        struck = time.perf_counter()
    results = await asyncio.gather(*jobs, return_exceptions=True)
    ended = time.perf_counter()
    return {
        "results": results,
        "unavailable": sum(isinstance(result, RendererUnavailable) for result in results),
        "wall_s": ended - started,
        "after_fault_s": ended - struck if struck is not None else None,
    }


async def run(deadline_s: float) -> list[dict]:
    from renderers import BrowserPool

    sketches = [painting(index) for index in range(4)]
    rows = []
    for name, fault in FAULTS.items():
        async with BrowserPool(browsers=2, pages_per_browser=2, deadline_s=deadline_s) as pool:
            clean = await batch_with_fault(pool, sketches, None)
            struck = await batch_with_fault(pool, sketches, fault)
            after = await pool.render(sketches[0])
            innocent = sum(
                not isinstance(result, Exception) and result.png != truth.png
                for result, truth in zip(struck["results"], clean["results"], strict=True)
            )
            rows.append(
                {
                    "fault": name,
                    "renders": len(sketches),
                    "wrong_verdicts": innocent,
                    "dead_letters": struck["unavailable"],
                    "verdicts_within_s": round(struck["after_fault_s"], 1),
                    "batch_s": round(struck["wall_s"], 1),
                    "clean_batch_s": round(clean["wall_s"], 1),
                    "whole_after": bool(
                        after.ok and after.png == clean["results"][0].png and not chromium_left_stopped()
                    ),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.splitlines()[0])
    parser.add_argument("--deadline", type=float, default=20.0, help="the pool's render deadline, seconds")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    rows = asyncio.run(run(args.deadline))
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'fault':<20}{'n':>3}{'wrong':>7}{'dead':>6}{'verdicts in s':>15}{'batch s':>9}{'clean s':>9}{'whole':>7}")
    for row in rows:
        print(
            f"{row['fault']:<20}{row['renders']:>3}{row['wrong_verdicts']:>7}{row['dead_letters']:>6}"
            f"{row['verdicts_within_s']:>15}{row['batch_s']:>9}{row['clean_batch_s']:>9}{str(row['whole_after']):>7}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
