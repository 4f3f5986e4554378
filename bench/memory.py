"""`python -m bench.memory [-- ARGS]`: where a run's memory goes, by phase and by owner; one table.

Runs `watercolour ARGS` (default: `demo`, the README's main job) in a child process and samples, ten times a
second, the resident memory of that process (the Python heap, torch's tensors and everything else it maps) and of
its descendants (the Chromium pool, Tesseract). The child marks where it is, so each sample belongs to a phase:
the pool gallery, the warm start, and inside GRPO generation, scoring, the update (the rest of a training step),
checkpoints, and the galleries at the end. Prints per phase its seconds and the peak of each owner, then the
largest resident set any one process reached, the figure `/usr/bin/time -v` reports as its maximum resident set
size.

    python -m bench.memory                                  # `watercolour demo` (about 30 minutes on 2 cores)
    python -m bench.memory -- train --preset smoke --steps 1 --run-dir runs/memory
    python -m bench.memory --json OUT.json -- demo --smoke  # also writes the table's numbers

`--bound-gb X` exits 1 when that largest process went past X GB (the check `tests/bench/test_memory.py` runs).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psutil


GB = 1e9
# Where the child can be: (module, attribute path, phase). Innermost wins: a generation inside a training step is
# "generate", what is left of the step is "update".
PHASES = (
    ("watercolour.commands.demo", "render_pool_gallery", "pool gallery"),
    ("watercolour.training.demo_run", "warm_start", "warm start"),
    ("watercolour.training.warm_start_cache", "warm_start", "warm start"),
    ("watercolour.training.trainer", "TimedGRPOTrainer.training_step", "update"),
    ("watercolour.training.trainer", "TimedGRPOTrainer._generate", "generate"),
    ("watercolour.training.trainer", "TimedGRPOTrainer._calculate_rewards", "score"),
    ("transformers.trainer", "Trainer._save_checkpoint", "checkpoint"),
    ("watercolour.training.run", "write_gallery", "run gallery"),
    ("watercolour.training.demo_run", "write_first_last_sheet", "run gallery"),
)
ORDER = ["setup", *dict.fromkeys(phase for _, _, phase in PHASES), "between phases"]


def mark_phases(marks_path: str) -> None:
    """In the child: wrap each phase's function so entering and leaving it is written to `marks_path`. Each
    module is patched when the run first imports it, never earlier (importing TRL early would change where
    trackio writes)."""
    import functools
    import importlib.abc
    import importlib.machinery

    marks = open(marks_path, "a", buffering=1)  # noqa: SIM115 - open for the life of the process
    wanted: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for module_name, attribute, phase in PHASES:
        wanted[module_name].append((attribute, phase))

    def marked(function: Any, phase: str) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            marks.write(f"{time.monotonic()} + {phase}\n")
            try:
                return function(*args, **kwargs)
            finally:
                marks.write(f"{time.monotonic()} - {phase}\n")

        return wrapper

    def patch(module: Any) -> None:
        for attribute, phase in wanted.get(module.__name__, []):
            owner = module
            *path, name = attribute.split(".")
            for part in path:
                owner = getattr(owner, part)
            setattr(owner, name, marked(getattr(owner, name), phase))

    class Loader(importlib.abc.Loader):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def create_module(self, spec: Any) -> Any:
            return self.inner.create_module(spec)

        def exec_module(self, module: Any) -> None:
            self.inner.exec_module(module)
            patch(module)

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            if name not in wanted:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                spec.loader = Loader(spec.loader)
            return spec

    sys.meta_path.insert(0, Finder())


def child_main(marks_path: str, argv: list[str]) -> int:
    mark_phases(marks_path)
    from watercolour.cli import main

    return main(argv)


def phase_at(marks: list[tuple[float, str, str]], moment: float) -> str:
    """The innermost phase open at `moment` (the marks in time order)."""
    open_phases: list[str] = []
    for when, sign, phase in marks:
        if when > moment:
            break
        if sign == "+":
            open_phases.append(phase)
        elif phase in open_phases:
            open_phases.reverse()
            open_phases.remove(phase)
            open_phases.reverse()
    if open_phases:
        return open_phases[-1]
    return "setup" if not marks or moment < marks[0][0] else "between phases"


def read_marks(path: Path) -> list[tuple[float, str, str]]:
    marks = []
    for line in path.read_text().splitlines():
        when, sign, phase = line.split(" ", 2)
        marks.append((float(when), sign, phase))
    return marks


def owner_of(process: psutil.Process) -> str:
    try:
        name = process.name().lower()
    except psutil.Error:
        return "other"
    if "chrom" in name or "headless" in name:
        return "browsers"
    if "tesseract" in name:
        return "tesseract"
    return "other"


def sample(root: psutil.Process) -> tuple[float, dict[str, float], float]:
    """The root's resident bytes, its descendants' by owner (summed), and the largest single process's."""
    main = root.memory_info().rss
    owners: dict[str, float] = defaultdict(float)
    largest = main
    for child in root.children(recursive=True):
        try:
            rss = child.memory_info().rss
        except psutil.Error:
            continue
        owners[owner_of(child)] += rss
        largest = max(largest, rss)
    return main, owners, largest


def stop_tree(root: psutil.Process, grace_s: float = 10.0) -> None:
    """Terminate the measured process and its descendants; kill what is left after `grace_s`."""
    try:
        tree = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for process in tree:
        try:
            process.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(tree, timeout=grace_s)
    for process in alive:
        try:
            process.kill()
        except psutil.Error:
            pass


def measure(argv: list[str], interval_s: float = 0.1) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        marks_path = Path(scratch) / "marks"
        marks_path.touch()
        code = f"import sys, bench.memory as m; sys.exit(m.child_main({str(marks_path)!r}, {argv!r}))"
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        started = time.monotonic()
        child = subprocess.Popen([sys.executable, "-c", code], env=env)
        root = psutil.Process(child.pid)
        samples: list[tuple[float, float, dict[str, float], float]] = []
        reaped_peak = 0.0
        try:
            while True:
                # Reaped here, not by Popen, for the kernel's count of the run's own peak (what `/usr/bin/time -v`
                # reports): the largest resident set of the child and every descendant it waited for, so a run
                # shorter than one sampling interval still has its peak.
                pid, status, usage = os.wait4(child.pid, os.WNOHANG)
                if pid:
                    child.returncode = os.waitstatus_to_exitcode(status)
                    reaped_peak = usage.ru_maxrss * 1024.0  # kB on Linux
                    break
                try:
                    samples.append((time.monotonic(), *sample(root)))
                except psutil.Error:
                    pass
                time.sleep(interval_s)
        finally:  # stopped (Ctrl-C, SIGTERM): the measured run and its browsers stop with it
            if child.returncode is None:
                stop_tree(root)
        marks = read_marks(marks_path)
    phases: dict[str, dict[str, float]] = {}
    last = started
    for when, main, owners, largest in samples:
        row = phases.setdefault(phase_at(marks, when), defaultdict(float))
        row["seconds"] += when - last
        last = when
        row["python"] = max(row["python"], main / GB)
        for owner, rss in owners.items():
            row[owner] = max(row[owner], rss / GB)
        row["total"] = max(row["total"], (main + sum(owners.values())) / GB)
        row["largest process"] = max(row["largest process"], largest / GB)
    return {
        "command": ["watercolour", *argv],
        "returncode": child.returncode,
        "seconds": round(time.monotonic() - started, 1),
        "phases": {name: {k: round(v, 2) for k, v in phases[name].items()} for name in ORDER if name in phases},
        "largest_process_gb": round(max(max((s[3] for s in samples), default=0.0), reaped_peak) / GB, 2),
    }


def table(result: dict[str, Any]) -> str:
    owners = ["python", "browsers", "tesseract", "other", "total"]
    lines = [
        f"`{' '.join(result['command'])}`: {result['seconds']} s, exit {result['returncode']}",
        "",
        "| phase | seconds | " + " | ".join(f"{owner} GB" for owner in owners) + " |",
        "|---" * (len(owners) + 2) + "|",
    ]
    for name, row in result["phases"].items():
        cells = " | ".join(f"{row.get(owner, 0.0):.2f}" for owner in owners)
        lines.append(f"| {name} | {row['seconds']:.0f} | {cells} |")
    lines += [
        "",
        f"largest process (what `/usr/bin/time -v` calls maximum resident set size): "
        f"**{result['largest_process_gb']:.2f} GB**",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--bound-gb", type=float, help="exit 1 when the largest process went past this")
    parser.add_argument("command", nargs="*", default=["demo"], help="watercolour's arguments (after --)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `measure` stops the run it started
    result = measure(args.command)
    print(table(result), flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if result["returncode"] != 0:
        return result["returncode"]
    if args.bound_gb is not None and result["largest_process_gb"] > args.bound_gb:
        print(f"the largest process reached {result['largest_process_gb']:.2f} GB, past {args.bound_gb} GB")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
