"""The judge's curriculum and group modes train on CPU: two GRPO steps each with the tiny taught policy."""

from __future__ import annotations

import json
import os

import pytest

from deployments.presets import load_config
from tests.models import tiny_sketcher
from watercolour.run_records.rollout_store import RolloutStore


GENERATIONS = 4
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def train_two_steps(run_dir, **judge) -> list[dict]:
    os.environ.setdefault("TRACKIO_DIR", str(run_dir / "trackio"))
    from watercolour.training.trainer import build_trainer, close_reward

    overrides = {
        "run_dir": str(run_dir),
        "training.model": str(tiny_sketcher()),
        "training.steps": 2,
        "training.num_generations": GENERATIONS,
        "training.per_device_batch_size": GENERATIONS,
        "training.gradient_accumulation_steps": 1,
        "training.prompt": "full",
        "training.max_completion_length": 8,
        "training.learning_rate": 1e-2,
        "render.browsers": 1,
        **{f"judge.{key}": value for key, value in judge.items()},
    }
    trainer = build_trainer(load_config("smoke", overrides), run_dir, echo=False)
    try:
        trainer.train()
    finally:
        close_reward(trainer)
    rows = RolloutStore(run_dir, GENERATIONS).rows()
    assert len(rows) == 2 * GENERATIONS
    return rows


def test_a_curriculum_run_records_each_rollouts_draw(tmp_path):
    rows = train_two_steps(tmp_path, **{"curriculum.enabled": True})
    judged = [json.loads(row["parts"])["details"]["judge"] for row in rows if row["judge"] is not None]
    assert judged, "the taught policy paints, so some rollouts reach the judge"
    for detail in judged:
        assert set(detail["draw"]) == {"recent_win_rate", "wanted", "drawn"}
        assert 0.0 <= detail["draw"]["drawn"] <= 1.0 and len(detail["comparisons"]) == 4
    assert (tmp_path / "judge-difficulty.json").is_file()


def test_a_group_mode_run_scores_each_painting_by_its_win_rate_in_its_group(tmp_path):
    rows = train_two_steps(tmp_path, mode="group")
    for step in (1, 2):
        judged = [row for row in rows if row["step"] == step and row["judge"] is not None]
        details = [json.loads(row["parts"])["details"]["judge"] for row in judged]
        # Each painting met every other admitted painting of its group, and nothing from the pool.
        assert all(len(d["comparisons"]) == len(judged) - 1 for d in details)
        assert all(c["reference"].startswith("groupmate-") for d in details for c in d["comparisons"])
        if len(judged) > 1:
            assert sum(row["judge"] for row in judged) == pytest.approx(len(judged) / 2)
