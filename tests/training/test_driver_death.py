"""Training through the worst failure in the field: the renderer's driver dies under one rollout's render.

The published reproduction lost two 14-hour runs to a dead driver whose connection the pool kept using, and in this
project one sketch once turned every later reward of a run into a genuine-looking zero the same way. Here a CPU run
of the taught tiny policy (two steps of four rollouts, the real renderer, the offline scorers) has Playwright's driver
SIGKILLed the moment the first rollout's sketch is in its page, as a sketch that killed it would. The content cache is
off, so the second step renders again on whatever the pool became. That step's other rewards, and the next step's,
must be the ones the same completions get from a clean engine; a dead letter, if any, is recorded with its cause.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest

from deployments.presets import load_config
from renderers.page import Slot
from rewards.scoring.cache import ContentCache
from rewards.scoring.composite import group_seed
from rewards.scoring.scoring_engine import ScoringEngine
from tests.models import tiny_smoke_overrides
from watercolour.run_records.rollout_store import RolloutStore


STEPS = 2
GENERATIONS = 4

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_driver_killed_under_a_rollout_costs_no_reward_of_its_step_or_the_next(tmp_path, monkeypatch):
    os.environ.setdefault("TRACKIO_DIR", str(tmp_path / "trackio"))
    from watercolour.training.trainer import build_trainer, close_reward

    killed: list[int] = []
    run = Slot.run

    async def run_and_kill_once(slot, source, seed, size):
        rendering = asyncio.ensure_future(run(slot, source, seed, size))
        if not killed:
            killed.append(slot.driver.manager._client._transport._proc.pid)
            while not slot.mounted and not rendering.done():
                await asyncio.sleep(0.01)
            os.kill(killed[0], signal.SIGKILL)
        return await rendering

    monkeypatch.setattr(Slot, "run", run_and_kill_once)
    monkeypatch.setattr(ContentCache, "load_render", lambda cache, key: None)  # every step renders for real
    run_dir = tmp_path / "run"
    config = load_config("smoke", tiny_smoke_overrides(run_dir, STEPS, GENERATIONS))
    trainer = build_trainer(config, run_dir, echo=False)
    try:
        trainer.train()
    finally:
        close_reward(trainer)
    monkeypatch.undo()
    assert len(killed) == 1

    rows = RolloutStore(run_dir, GENERATIONS).rows()
    assert sorted({row["step"] for row in rows}) == [1, 2] and len(rows) == STEPS * GENERATIONS
    clean = clean_rewards(config, tmp_path / "clean", rows)
    letters = (
        (run_dir / "dead_letters.jsonl").read_text().splitlines() if (run_dir / "dead_letters.jsonl").exists() else []
    )
    for row in rows:
        if row["dead_letter"] is None:
            assert row["reward"] == clean[id(row)], (row["step"], row["index"], row["violations"])
        else:
            assert row["reward"] is None and "driver" in json.loads(row["dead_letter"])["cause"]
    assert len(letters) == sum(row["dead_letter"] is not None for row in rows)
    assert all(row["dead_letter"] is None for row in rows if row["step"] == 2)


def clean_rewards(config, run_dir, rows: list[dict]) -> dict[int, float | None]:
    """Each row's reward from a fresh engine with its own pool, under the row's group seed: the value the run should
    have recorded (by the row's id)."""
    prompts = [json.loads(row["prompt"]) if row["prompt"].startswith("[") else row["prompt"] for row in rows]
    seeds = [group_seed(prompt, row["step"]) for prompt, row in zip(prompts, rows, strict=True)]

    async def score() -> list:
        engine = ScoringEngine(config.scoring, run_dir)
        try:
            return await engine.score([row["completion"] for row in rows], seeds, step=None)
        finally:
            await engine.aclose()

    return {id(row): parts.reward for row, parts in zip(rows, asyncio.run(score()), strict=True)}
