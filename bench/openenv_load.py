"""`python -m bench.openenv_load`: the OpenEnv painting server under load, against one session at a time.

Loopback only, bounded in count and time. Two servers run in this one command, each a real
`python -m openenv_painting.server.app` subprocess on 127.0.0.1 with its own run directory (no shared cache) and
the same small render pool:

  concurrent   `--sessions` sessions (64) at once, `--steps` paintings each (4), plus `--killed` clients (4) in
               subprocesses that open a session, start painting and are SIGKILLed: their slots must come back.
  one-at-a-time the published server's mode (max_sessions=1): the first `--sequential-sessions` (8) of the same
               episodes, one session after another. Its throughput is the baseline; its pictures are the ground
               truth for the same sketches painted concurrently.

Every session paints its own sketches: a good one (bench/sketches, background tinted per session and step, so no
two sessions send the same code and the content cache cannot answer for them), a broken one (gate fixtures the
static checks refuse), a good one, and a fourth that is hostile for every eighth session (a draw or setup that
never returns, a memory bomb: the render deadline must end them) and good for the rest. The table reports
throughput, p50/p95 step latency, the server's peak memory (its process and Chromium's, sampled), cross-talk
(each observation's sketch is the one its session sent; every distinct sketch got a distinct picture; the
concurrent pictures equal the one-at-a-time ones), the longest render of a good sketch and of a hostile one
(neither beyond the deadline), and the sessions left open after the killed clients (0 = reclaimed).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx


ROOT = Path(__file__).resolve().parents[1]
GOOD = sorted((ROOT / "bench" / "sketches").glob("*.js"))
GATE = ROOT / "watercolour" / "fixtures" / "gate"
BROKEN = [GATE / name for name in ("bare_ellipse.js", "brush_outside_allowlist.js", "eval.js", "binary_garbage.bin")]
HOSTILE = [GATE / name for name in ("infinite_loop_draw.js", "infinite_loop_setup.js", "memory_bomb.js")]
HOSTILE_EVERY = 8
BACKGROUND = re.compile(r'background\("#[0-9a-fA-F]{6}"\)')
# The whole benchmark must end: a server that never starts, or a step that never returns, fails it.
SERVER_START_S = 120.0
STEP_TIMEOUT_S = 900.0


@dataclass
class Step:
    session: int
    kind: str  # good | broken | hostile
    sketch_sha256: str
    latency_s: float
    picture: str | None
    seen_sketch: str | None
    sent: str
    render_ms: float | None
    violations: list[str] = field(default_factory=list)


def tinted(path: Path, session: int, step: int) -> str:
    """A good sketch whose background is tinted by (session, step): its own code, its own picture."""
    colour = f"#f6{0xE0 + (session * 7 + step * 3) % 0x20:02x}{(session * 4 + step) % 256:02x}"
    return BACKGROUND.sub(f'background("{colour}")', path.read_text(), count=1)


def episode(session: int, steps: int) -> list[tuple[str, str]]:
    """(kind, sketch) for each step of one session's episode."""
    plan = []
    for step in range(steps):
        if step % 4 == 1:
            broken = BROKEN[(session + step) % len(BROKEN)]
            plan.append(("broken", broken.read_bytes().decode("utf-8", "replace")))
        elif step % 4 == 3 and session % HOSTILE_EVERY == 0:
            plan.append(("hostile", HOSTILE[(session // HOSTILE_EVERY) % len(HOSTILE)].read_text()))
        else:
            plan.append(("good", tinted(GOOD[(session + step) % len(GOOD)], session, step)))
    return plan


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """One server subprocess; `peak_mb` is the highest RSS of it and its children (Chromium) while sampled."""

    def __init__(self, max_sessions: int, overrides: list[str], run_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "openenv_painting.server.app", "--port", str(self.port)]
        command += ["--max-sessions", str(max_sessions), "--preset", "offline", f"run_dir={run_dir}", *overrides]
        # A session of its own: a signal meant for this benchmark's terminal never reaches the server mid-run.
        self.process = subprocess.Popen(
            command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True
        )
        self.peak_mb = 0.0
        self._sampling = True
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server on port {self.port} did not start")
            time.sleep(0.2)
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        import psutil

        root = psutil.Process(self.process.pid)
        while self._sampling:
            try:
                processes = [root, *root.children(recursive=True)]
                total = sum(process.memory_info().rss for process in processes if process.is_running())
            except psutil.Error:
                continue
            self.peak_mb = max(self.peak_mb, total / 2**20)
            time.sleep(0.25)

    def active_sessions(self) -> int:
        return int(httpx.get(f"{self.url}/sessions", timeout=10).json()["active"])

    def stop(self) -> None:
        self._sampling = False
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


async def run_session(url: str, session: int, plan: list[tuple[str, str]]) -> list[Step]:
    from openenv_painting.client import PaintingClient
    from openenv_painting.models import PaintAction

    steps = []
    async with PaintingClient(base_url=url, message_timeout_s=STEP_TIMEOUT_S) as client:
        await client.reset(prompt=f"load test session {session}", step=0)
        for kind, sketch in plan:
            started = time.perf_counter()
            result = await client.step(PaintAction(sketch=sketch))
            observation = result.observation
            verdict = (observation.parts or {}).get("verdict") or {}
            render = verdict.get("render") or {}
            steps.append(
                Step(
                    session=session,
                    kind=kind,
                    sketch_sha256=hashlib.sha256(sketch.encode()).hexdigest(),
                    latency_s=time.perf_counter() - started,
                    picture=observation.picture_sha256,
                    seen_sketch=verdict.get("sketch"),
                    sent=sketch.strip(),
                    render_ms=render.get("render_ms"),
                    violations=list(verdict.get("violations", [])),
                )
            )
    return steps


KILLED_CLIENT = """
import asyncio, sys
from openenv_painting.client import PaintingClient
from openenv_painting.models import PaintAction
async def main():
    client = PaintingClient(base_url=sys.argv[1], message_timeout_s=900)
    await client.reset(prompt="killed")
    print("open", flush=True)
    await client.step(PaintAction(sketch=sys.argv[2]))
asyncio.run(main())
"""


def start_killed_clients(url: str, count: int) -> list[subprocess.Popen]:
    sketch = HOSTILE[0].read_text()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    clients = [
        subprocess.Popen(
            [sys.executable, "-c", KILLED_CLIENT, url, sketch], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(count)
    ]
    for client in clients:
        assert client.stdout is not None and client.stdout.readline().strip() == "open"
    for client in clients:
        client.kill()  # SIGKILL mid-step: no close frame
        client.wait()
    return clients


async def load(url: str, plans: dict[int, list[tuple[str, str]]], at_once: bool) -> list[Step]:
    if at_once:
        done = await asyncio.gather(
            *(run_session(url, session, plan) for session, plan in plans.items()), return_exceptions=True
        )
        for session, outcome in zip(plans, done, strict=True):
            if isinstance(outcome, BaseException):  # reported in the table, never hidden
                print(f"session {session} failed: {type(outcome).__name__}: {outcome}", file=sys.stderr)
        return [step for steps in done if not isinstance(steps, BaseException) for step in steps]
    steps = []
    for session, plan in plans.items():
        steps += await run_session(url, session, plan)
    return steps


def summary(
    mode: str, steps: list[Step], wall_s: float, server: Server, sessions: int, steps_each: int, deadline_s: float
) -> dict:
    latencies = sorted(step.latency_s for step in steps)
    good = [step for step in steps if step.kind == "good"]
    hostile = [step for step in steps if step.kind == "hostile"]
    own = all(step.seen_sketch is None or step.seen_sketch == step.sent for step in steps)
    pictures = {step.sketch_sha256: step.picture for step in good}
    return {
        "mode": mode,
        "sessions": sessions,
        "steps": len(steps),
        "steps_failed": sessions * steps_each - len(steps),
        "wall_s": round(wall_s, 1),
        "steps_per_min": round(60 * len(steps) / wall_s, 1),
        "p50_s": round(statistics.median(latencies), 2),
        "p95_s": round(latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))], 2),
        "peak_mb": round(server.peak_mb),
        "own_sketch": own,
        "distinct_pictures": len(set(pictures.values())) == len(pictures) and None not in pictures.values(),
        "good_refused": f"{sum(bool(s.violations) for s in good)}/{len(good)}",
        "max_good_render_s": round(max((s.render_ms or 0) for s in good) / 1000, 1) if good else None,
        "max_hostile_render_s": round(max((s.render_ms or 0) for s in hostile) / 1000, 1) if hostile else None,
        "hostile_ended_by": sorted({v for s in hostile for v in s.violations}),
        "deadline_s": deadline_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--sequential-sessions", type=int, default=8)
    parser.add_argument("--killed", type=int, default=4)
    parser.add_argument("--browsers", type=int, default=1)
    parser.add_argument("--pages", type=int, default=2)
    parser.add_argument("--deadline-s", type=float, default=30.0)
    parser.add_argument("--json", type=Path, help="Also write the rows here.")
    args = parser.parse_args(argv)

    overrides = [
        f"render.browsers={args.browsers}",
        f"render.pages_per_browser={args.pages}",
        f"render.deadline_s={args.deadline_s}",
        f"repaint.turns={args.steps}",
    ]
    plans = {session: episode(session, args.steps) for session in range(args.sessions)}
    scratch = Path(tempfile.mkdtemp(prefix="bench-openenv-"))
    rows = []

    concurrent = Server(args.sessions + args.killed, overrides, scratch / "concurrent")
    try:
        start_killed_clients(concurrent.url, args.killed)
        started = time.perf_counter()
        steps = asyncio.run(load(concurrent.url, plans, at_once=True))
        wall_s = time.perf_counter() - started
        row = summary("concurrent", steps, wall_s, concurrent, args.sessions, args.steps, args.deadline_s)
        row["left_open_after"] = concurrent.active_sessions()
        rows.append(row)
    finally:
        concurrent.stop()

    sequential_plans = {session: plans[session] for session in range(args.sequential_sessions)}
    one = Server(1, overrides, scratch / "one-at-a-time")
    try:
        started = time.perf_counter()
        baseline = asyncio.run(load(one.url, sequential_plans, at_once=False))
        wall_s = time.perf_counter() - started
        row = summary("one-at-a-time", baseline, wall_s, one, len(sequential_plans), args.steps, args.deadline_s)
        row["left_open_after"] = one.active_sessions()
        rows.append(row)
    finally:
        one.stop()

    truth = {(s.session, s.sketch_sha256): s.picture for s in baseline}
    same = [truth[(s.session, s.sketch_sha256)] == s.picture for s in steps if (s.session, s.sketch_sha256) in truth]
    rows[0]["same_pictures_as_one_at_a_time"] = f"{sum(same)}/{len(same)}"
    rows[0]["throughput_x"] = round(rows[0]["steps_per_min"] / rows[1]["steps_per_min"], 1)

    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    ok = (
        rows[0]["steps_failed"] == 0
        and rows[0]["own_sketch"]
        and rows[0]["distinct_pictures"]
        and all(same)
        and rows[0]["left_open_after"] == 0
    )
    return 0 if ok else 1


def print_table(rows: list[dict]) -> None:
    keys = list(dict.fromkeys(key for row in rows for key in row))
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row.get(key, "")) for key in keys) + " |")


if __name__ == "__main__":
    sys.exit(main())
