"""One batch through every route behind TRL's one reward adapter gives the same parts.

The engine in this process, the Prefect fan-out (a task per group, in a real flow run) and the OpenEnv server (uvicorn
in a thread, its own engine and Chromium) each score the same four completions: two groups asked for two different
subjects, one completion refused by the gate. The offline aesthetic stand-in reads the subject, so a route that lost
it would score other numbers. Then every row is prefetched first, as early scoring does, into fresh run directories:
the parts stay the same, and each call logs that its whole batch was scored ahead.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from deployments.presets import load_config
from ground.records import RewardParts
from ground.run_config import OpenEnvSettings, RunConfig
from openenv_painting.scorer import OpenEnvScorer
from openenv_painting.server.app import ServerSettings, serving
from rewards.scoring.composite import CompositeReward, Scorer
from rewards.scoring.engine_thread import close_engine_thread
from rewards.scoring.scoring_engine import ScoringEngine
from tasks.fanout import FannedScorer, StepState


pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROMPTS = ["paint a", "paint a", "paint b", "paint b"]
SUBJECTS = ["a peach hibiscus", "a peach hibiscus", "a blue anemone", "a blue anemone"]
STEP = StepState(global_step=3)


def fenced(sketch: str) -> str:
    return f"Here it is.\n```javascript\n{sketch}\n```"


@pytest.fixture
def batch(flower_sketch: str) -> list[str]:
    return [
        fenced(flower_sketch),
        fenced(flower_sketch.replace("#f28c6a", "#6a8cf2")),
        "I cannot paint that.",
        fenced(flower_sketch.replace("#f28c6a", "#3050d0")),
    ]


def config_for(run_dir: Path) -> RunConfig:
    return load_config("offline", {"run_dir": str(run_dir), "training.num_generations": 2, "render.browsers": 1})


def score(scorer: Scorer, batch: list[str], ahead: bool, cache: Path) -> tuple[list[RewardParts], dict[str, float]]:
    """The adapter over `scorer` scores `batch` (each row prefetched first when `ahead`): its parts and its metrics,
    with `rendered ahead`: the renders in the route's content cache (`cache`) before the batch's call."""
    scored: list[list[RewardParts]] = []
    metrics: dict[str, float] = {}
    reward = CompositeReward(scorer, lambda prompts, completions, parts, kwargs: scored.append(parts))
    kwargs: dict[str, Any] = {"trainer_state": STEP, "subject": SUBJECTS, "log_metric": metrics.__setitem__}

    async def run() -> None:
        try:
            if ahead:
                await asyncio.gather(
                    *(
                        reward.prefetch(text, prompt, trainer_state=STEP, subject=subject)
                        for text, prompt, subject in zip(batch, PROMPTS, SUBJECTS, strict=True)
                    )
                )
            metrics["rendered ahead"] = len(list(cache.glob("render/*.png")))
            await reward(PROMPTS, batch, **kwargs)
        finally:
            await reward.aclose()

    asyncio.run(run())
    (parts,) = scored
    return parts, metrics


def through_every_route(tmp_path: Path, batch: list[str], ahead: bool) -> dict[str, tuple[list, dict]]:
    """Each route's (parts, metrics), each scoring into a run directory of its own (nothing from another's cache)."""
    engine = ScoringEngine(config_for(tmp_path / "engine").scoring, tmp_path / "engine")
    scored = {"engine": score(engine, batch, ahead, tmp_path / "engine" / "cache")}

    @flow
    def fanned() -> tuple[list, dict]:
        with ThreadPoolTaskRunner(max_workers=2) as runner:
            fan_out = FannedScorer(config_for(tmp_path / "fan-out"), tmp_path / "fan-out", runner=runner)
            return score(fan_out, batch, ahead, tmp_path / "fan-out" / "cache")

    try:
        scored["fan-out"] = fanned()
    finally:
        close_engine_thread()
    server_config = config_for(tmp_path / "server")
    with serving(server_config, ServerSettings(port=0, max_sessions=4)) as url:
        scorer = OpenEnvScorer(OpenEnvSettings(url=url), server_config.weights.model_dump(), tmp_path / "openenv")
        scored["openenv"] = score(scorer, batch, ahead, tmp_path / "server" / "cache")  # the server renders
    return scored


def summary(part: RewardParts) -> dict[str, Any]:
    """What must agree across routes: the reward, every term, what each term's answer said, the gate's verdict."""
    verdict = part.verdict
    return {
        "reward": part.reward,
        "terms": part.terms,
        "details": part.details,
        "dead_letter": part.dead_letter,
        "passed": part.passed,
        "sketch_hash": verdict.sketch_hash if verdict is not None else None,
        "violations": verdict.violations if verdict is not None else None,
    }


def test_every_route_gives_the_same_parts_for_the_same_batch_with_or_without_prefetch(
    prefect_server, tmp_path: Path, batch: list[str]
) -> None:
    plain = through_every_route(tmp_path / "plain", batch, ahead=False)
    early = through_every_route(tmp_path / "early", batch, ahead=True)
    expected = [summary(part) for part in plain["engine"][0]]
    assert [row["passed"] for row in expected] == [True, True, False, True]
    assert all(row["reward"] is not None for row in expected) and expected[2]["reward"] == 0.0
    for route, (parts, metrics) in {
        **plain,
        **{f"{name}, prefetched": value for name, value in early.items()},
    }.items():
        assert [summary(part) for part in parts] == expected, route
        assert metrics["scoring/prefetched"] == (1.0 if "prefetched" in route else 0.0), route
        if "prefetched" in route:  # the prefetches did the work: the three admitted paintings were rendered
            assert metrics["rendered ahead"] == 3, route
    # The subject reached every route: the same painting scored as another subject scores otherwise.
    engine = ScoringEngine(config_for(tmp_path / "other").scoring, tmp_path / "other")

    async def as_other_subject() -> RewardParts:
        try:
            return await engine.score_one(batch[3], seed=0, subject=SUBJECTS[0])
        finally:
            await engine.aclose()

    assert asyncio.run(as_other_subject()).terms["aesthetic"] != expected[3]["terms"]["aesthetic"]
