"""The scoring engine's lifecycle and its per-painting form; the rules themselves are tested through its
consumers (test_composite, test_fanout, test_score_command, test_reward_terms)."""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path

import pytest

from deployments.presets import load_config
from rewards.scoring.scoring_engine import ScoringEngine


pytestmark = pytest.mark.browser


def fenced(source: str) -> str:
    return f"```javascript\n{source}\n```"


async def test_start_and_close_are_idempotent_and_two_consumers_share_one_engine(
    tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    engine = ScoringEngine(load_config("offline", {"run_dir": str(tmp_path)}).scoring, tmp_path, browsers=browser_pool)
    await engine.start()
    renderer = engine.renderer
    await engine.start()
    assert engine.renderer is renderer  # started once
    # A batch and a single painting at once, on one engine: the shared sketch is rendered once.
    batch, one = await asyncio.gather(
        engine.score([fenced(flower_sketch), "no"], [5, 5], step=2), engine.score_one(flower_sketch, seed=5, step=2)
    )
    assert batch[0].reward == one.reward and batch[0].reward is not None and batch[1].reward == 0.0
    assert renderer.renders == 1
    await engine.aclose()
    await engine.aclose()
    assert pickle.loads(pickle.dumps(engine))._clients is None


async def test_a_batch_needs_one_seed_per_completion(tmp_path: Path, browser_pool) -> None:
    engine = ScoringEngine(load_config("offline", {"run_dir": str(tmp_path)}).scoring, tmp_path, browsers=browser_pool)
    with pytest.raises(ValueError, match="give one seed each"):
        await engine.score(["a", "b"], [0], step=None)
