"""A reward term is one module: a toy term, written by the recipe in docs/reward.md ("Adding a term") to a folder on
the import path and named in the registry's list of term modules, takes its settings and its weight from the run
configuration and reaches the reward, the parts, the curves, the rollout store, the step artifacts and the
evaluation table, in a scoring engine and in a training run, with no other edit."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError
from transformers import TrainerState

from deployments.presets import load_config
from ground.run_config import RunConfig
from rewards.scoring import terms
from rewards.scoring.scoring_engine import ScoringEngine, log_means
from tasks.observe import columns_explained, reward_rows
from tests.models import tiny_smoke_overrides
from watercolour.run_records.curves import CurvesFile, curve_row
from watercolour.run_records.rollout_store import RolloutStore
from watercolour.training.evaluation import format_evaluation, side_stats


pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reward.md"


def recipe_module() -> str:
    """The module of the recipe in docs/reward.md, as written there: its name, settings model and measure."""
    recipe = DOCS.read_text().split("### Adding a term", 1)[1]
    block = recipe.split("```python\n", 1)[1].split("```", 1)[0]
    return textwrap.dedent(block)


# The one preset line: the toy's weight, taken from the aesthetic's so the weights still sum to 1.
WEIGHTS = {"gate": 0.05, "length": 0.05, "judge": 0.0, "aesthetic": 0.8, "toy": 0.1}


@pytest.fixture
def toy_term(tmp_path_factory, monkeypatch):
    """The toy's module on the import path and its name in the registry's list, as the recipe says."""
    folder = tmp_path_factory.mktemp("terms")
    (folder / "toy_term.py").write_text(recipe_module())
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(terms, "TERM_MODULES", (*terms.TERM_MODULES, "toy_term"))
    assert terms.term_names() == ["gate", "length", "aesthetic", "judge", "toy"]


async def test_a_toy_term_reaches_reward_curves_store_artifacts_and_tables(
    toy_term, tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    config = load_config("offline", {"weights": WEIGHTS, "toy.value": 0.5, "run_dir": str(tmp_path)})
    engine = ScoringEngine(config.scoring, tmp_path, browsers=browser_pool)
    try:
        parts = await engine.score([flower_sketch, "no sketch"], [0, 0], step=1)
    finally:
        await engine.aclose()
    painted, refused = parts
    assert painted.term("toy") == 0.5 and refused.term("toy") is None
    assert painted.backends["toy"] == "toy-v1" and refused.reward == 0.0
    expected = 0.05 + 0.05 * painted.term("length") + 0.8 * painted.term("aesthetic") + 0.1 * 0.5
    assert painted.reward == pytest.approx(expected)

    logged: dict[str, float] = {}
    log_means(logged.__setitem__, parts)
    assert logged["reward/toy"] == 0.5
    curves = CurvesFile(tmp_path)
    curves.append(curve_row(1, {"reward": 0.3, **logged}))
    assert curves.read()[0]["toy_mean"] == "0.5"

    store = RolloutStore(tmp_path, num_generations=2, preset="toy")
    store.record_batch(["p", "p"], [flower_sketch, "no sketch"], parts, {"trainer_state": TrainerState(global_step=0)})
    assert [row["toy"] for row in store.rows()] == [0.5, None]

    assert [row["toy"] for row in reward_rows(parts)] == [0.5, None]
    assert "0.1 x toy" in columns_explained(parts) and "`toy`: the same value for any painting" in columns_explained(
        parts
    )
    report = {"sides": {"base": side_stats(parts).__dict__, "adapter": side_stats(parts).__dict__}}
    assert any(line.startswith("toy mean") for line in format_evaluation(report).splitlines())


async def test_a_term_at_weight_zero_is_never_built_and_takes_its_defaults(
    toy_term, tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    config = load_config("offline", {"run_dir": str(tmp_path)})
    assert config.model_extra is not None and config.model_extra["toy"] == {"value": 0.25}
    engine = ScoringEngine(config.scoring, tmp_path, browsers=browser_pool)
    try:
        (parts,) = await engine.score([flower_sketch], [0], step=None)
    finally:
        await engine.aclose()
    assert parts.term("toy") is None and parts.backends["toy"] == "off (weight 0)"
    with pytest.raises(ValidationError, match="valu"):
        load_config("offline", {"toy.valu": 0.5})


def test_a_term_module_nobody_lists_is_no_term(tmp_path: Path) -> None:
    assert "toy" not in terms.term_names()
    with pytest.raises(ValueError, match="no reward term named toy"):
        load_config("offline", {"weights": WEIGHTS})
    with pytest.raises(ValueError, match="no setting or reward term named toy"):
        load_config("offline", {"toy.value": 0.5})
    # A configuration built some other way meets the same refusal when the engine is built.
    unchecked = RunConfig.model_validate({"name": "offline", "weights": WEIGHTS})
    with pytest.raises(ValueError, match="no reward term named toy"):
        ScoringEngine(unchecked.scoring, tmp_path)


@pytest.mark.slow
def test_a_training_run_records_the_toy_term_in_its_curves_and_store(toy_term, tmp_path: Path) -> None:
    # trackio reads TRACKIO_DIR once, when TRL first imports it; keep this run's database out of the home cache.
    os.environ.setdefault("TRACKIO_DIR", str(tmp_path / "trackio"))
    from watercolour.training.trainer import build_trainer, close_reward

    overrides = tiny_smoke_overrides(tmp_path, 2, 4, weights=WEIGHTS, **{"toy.value": 0.5})
    trainer = build_trainer(load_config("smoke", overrides), tmp_path, echo=False)
    try:
        trainer.train()
    finally:
        close_reward(trainer)
    rows = RolloutStore(tmp_path, 4).rows()
    assert len(rows) == 8 and {row["passed"] for row in rows} == {True, False}
    assert all(row["toy"] == (0.5 if row["passed"] else None) for row in rows)
    assert [row["toy_mean"] for row in CurvesFile(tmp_path).read()] == ["0.5", "0.5"]
