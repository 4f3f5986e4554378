"""`python -m bench.tool_phase`: one repaint turn's paint calls, one by one as TRL runs them, with and without
painting ahead; one table.

TRL (1.16) runs a generated turn's tool calls episode by episode, waiting for each `paint` before starting the next.
`watercolour.training.paint_ahead` hands every paint call's sketch to the engine's `prefetch` as soon as the turn is
generated, so the renders overlap and each `paint` joins its own. Both paths here run that tool phase the way TRL does
(each episode's `PaintingEnv.paint` to completion on the trainer's event loop, in turn) on the same warm browser pool
under the `repaint` preset (offline scorers), for EPISODES seed-pool sketches; `ahead` first starts every prefetch, as
the trainer does when the turn's generation returns (with the episodes' group seed, so the offline aesthetic and judge
are answered ahead too). Every repetition paints into a fresh run directory, so nothing comes from the cache, and the
two paths alternate so load from other processes falls on both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.table import seconds_table


ROOT = Path(__file__).resolve().parents[1]
SEED_POOL = ROOT / "ground" / "seed_pool"
EPISODES = 8
PROMPT = [{"role": "user", "content": "Paint a flower."}]


def sketches() -> list[str]:
    return [path.read_text() for path in sorted(SEED_POOL.glob("*.js"))[:EPISODES]]


def measure(repeats: int) -> dict:
    from deployments.presets import load_config
    from episodes.painting_env import PaintingEnv
    from rewards.scoring.composite import group_seed
    from rewards.scoring.engine_thread import close_engine_thread, engine_thread
    from rewards.scoring.scoring_engine import ScoringEngine

    batch = sketches()
    scratch = Path(tempfile.mkdtemp(prefix="bench-tool-phase-"))
    host = engine_thread()  # a loop on its own thread, as TRL's `async_loop`
    settings = load_config("repaint", {"run_dir": str(scratch)})
    pool = host.run(host.browser_pool(settings.render))

    def tool_phase(run_dir: Path, ahead: bool) -> float:
        config = load_config("repaint", {"run_dir": str(run_dir)})
        assert config.repaint is not None
        engine = ScoringEngine(config.scoring, run_dir, browsers=pool)
        envs = [PaintingEnv(engine, config.repaint) for _ in batch]
        for env in envs:
            env.reset(prompt=PROMPT)
        seed = group_seed(PROMPT, None)  # what `reset` drew, outside training
        started = time.perf_counter()
        if ahead:
            for sketch in batch:
                asyncio.run_coroutine_threadsafe(engine.prefetch(sketch, seed=seed), host.loop)
        observations = [host.run(env.paint(sketch)) for env, sketch in zip(envs, batch, strict=True)]
        elapsed = time.perf_counter() - started
        assert all(isinstance(text, str) and text.startswith("Painting 1 of") for text in observations)
        assert all(env.turns[0].parts.dead_letter is None for env in envs), "a painting was not measured"
        return elapsed

    times: dict[str, list[float]] = {"one by one": [], "ahead": []}
    try:
        for index in range(repeats + 1):  # the first round warms the pool up and is not counted
            for path in ("one by one", "ahead") if index % 2 == 0 else ("ahead", "one by one"):
                elapsed = tool_phase(scratch / f"{path.replace(' ', '-')}-{index}", ahead=path == "ahead")
                if index > 0:
                    times[path].append(round(elapsed, 3))
    finally:
        close_engine_thread()
    one_by_one, ahead = statistics.median(times["one by one"]), statistics.median(times["ahead"])
    return {"episodes": len(batch), "repeats": repeats, "seconds": times, "speedup": round(one_by_one / ahead, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tool_phase", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="Timed tool phases per path (default 3).")
    parser.add_argument("--json", type=Path, help="Also write the report here.")
    args = parser.parse_args(argv)
    report = measure(args.repeats)
    caption = f"{report['episodes']} episodes' paint calls, {report['repeats']} timed turns each"
    print(seconds_table(report["seconds"], caption))
    print(f"painting ahead against one by one (ratio of medians): {report['speedup']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
