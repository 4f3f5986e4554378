"""`python -m bench.fanout`: one 8-rollout step scored directly and through the Prefect fan-out; one table.

Both paths score the same eight seed-pool sketches (two GRPO groups of four) under the `offline` preset on the
same warm browser pool and the same engine loop, through the one TRL adapter (`CompositeReward`): `direct` over the
engine on that loop, `prefect` over `FannedScorer` mapping one `score_group` task per group on a thread task runner
inside a flow, as `grpo_train` does. Every repetition scores into a fresh run directory, so nothing is answered from the cache.
The two paths alternate, so load from other processes falls on both; the overhead is the ratio of medians.
Each step is then scored again into the same run directory (`cached`: every render and score is a cache hit),
which leaves only what the path itself costs: the orchestration, measured apart from the renders' noise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.table import seconds_table


# The temporary server's telemetry heartbeat wrote to its SQLite database while the steps did, and logged a
# "database is locked" traceback into the table's output; it sends nothing from here anyway.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

ROOT = Path(__file__).resolve().parents[1]
SEED_POOL = ROOT / "ground" / "seed_pool"
GROUP = 4
STEP = 8


def completions() -> list[str]:
    sketches = sorted(SEED_POOL.glob("*.js"))[:STEP]
    return [f"```javascript\n{path.read_text()}\n```" for path in sketches]


def measure(repeats: int) -> dict:
    from prefect import flow
    from prefect.task_runners import ThreadPoolTaskRunner
    from prefect.testing.utilities import prefect_test_harness

    from deployments.presets import load_config
    from rewards.scoring.composite import CompositeReward
    from rewards.scoring.engine_thread import close_engine_thread, engine_thread
    from rewards.scoring.scoring_engine import ScoringEngine
    from tasks.fanout import FannedScorer, StepState

    batch, prompts = completions(), ["a"] * GROUP + ["b"] * GROUP
    scratch = Path(tempfile.mkdtemp(prefix="bench-fanout-"))

    def config_for(run_dir: Path):
        return load_config("offline", {"run_dir": str(run_dir), "training.num_generations": GROUP})

    direct_rewards: dict[Path, CompositeReward] = {}

    def direct(run_dir: Path) -> list:
        # One reward per run directory, as a trainer keeps one, so the cached round reuses its built clients
        # (the engine thread likewise keeps one engine per run directory for the fan-out).
        host = engine_thread()
        if run_dir not in direct_rewards:
            pool = host.run(host.browser_pool(config_for(run_dir).render))
            direct_rewards[run_dir] = CompositeReward(
                ScoringEngine(config_for(run_dir).scoring, run_dir, browsers=pool)
            )
        return host.run(direct_rewards[run_dir](prompts, batch, trainer_state=StepState(0)))

    @flow
    def timed(repeats: int) -> dict[str, list[float]]:
        times: dict[str, list[float]] = {"direct": [], "prefect": [], "direct cached": [], "prefect cached": []}
        with ThreadPoolTaskRunner(max_workers=2) as runner:
            for index in range(repeats + 1):  # the first round warms both paths up and is not counted
                for path in ("direct", "prefect") if index % 2 == 0 else ("prefect", "direct"):
                    run_dir = scratch / f"{path}-{index}"
                    for label in (path, f"{path} cached"):
                        started = time.perf_counter()
                        if path == "direct":
                            rewards = direct(run_dir)
                        else:
                            fanned = CompositeReward(FannedScorer(config_for(run_dir), run_dir, runner=runner))
                            rewards = asyncio.run(fanned(prompts, batch, trainer_state=StepState(0)))
                        elapsed = time.perf_counter() - started
                        assert all(reward is not None for reward in rewards), f"{label}: a rollout was not scored"
                        if index > 0:
                            times[label].append(elapsed)
        return times

    with prefect_test_harness(server_startup_timeout=120):
        try:
            times = timed(repeats)
        finally:
            for reward in direct_rewards.values():
                engine_thread().run(reward.aclose())
            close_engine_thread()
    medians = {path: statistics.median(values) for path, values in times.items()}
    return {
        "rollouts": STEP,
        "groups": STEP // GROUP,
        "repeats": repeats,
        "seconds": times,
        "median_s": medians,
        "overhead": medians["prefect"] / medians["direct"] - 1.0,
        # The fan-out's own cost (cached steps) as a share of a real step's time on the direct path.
        "orchestration_share": (medians["prefect cached"] - medians["direct cached"]) / medians["direct"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=4, help="Timed steps per path (default 4).")
    parser.add_argument("--json", type=Path, help="Also write the report here.")
    args = parser.parse_args(argv)
    report = measure(args.repeats)
    caption = f"{report['rollouts']} rollouts, {report['groups']} groups, {report['repeats']} timed steps each"
    print(seconds_table(report["seconds"], caption))
    print(f"prefect overhead over direct (fresh steps, ratio of medians): {report['overhead']:+.1%}")
    print(f"orchestration cost (cached steps' difference) per direct step: {report['orchestration_share']:+.1%}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
