"""Reward terms are registered units: a toy term, registered here and nowhere else, reaches the reward, the
parts, the curves, the rollout store, the step artifacts and the evaluation table without editing them."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import TrainerState

from deployments.presets import load_config
from ground.records import TermScore
from ground.run_config import RunConfig
from rewards.scoring.scoring_engine import ScoringEngine, log_means
from rewards.scoring.terms import register, unregister
from rewards.term import Admitted, RewardTerm
from tasks.observe import reward_rows
from watercolour.run_records.curves import CurvesFile, curve_row
from watercolour.run_records.rollout_store import RolloutStore
from watercolour.training.evaluation import format_evaluation, side_stats


pytestmark = pytest.mark.browser


class ToyClient:
    """A backend that answers 0.25 for any painting, and counts its calls."""

    backend_id = "toy-v1"
    calls = 0

    async def aclose(self) -> None:
        return None


async def measure_toy(client: ToyClient, rollouts: list[Admitted]) -> list[TermScore]:
    client.calls += 1
    return [TermScore(value=0.25, detail={"bytes": len(rollout.png)}) for rollout in rollouts]


TOY = RewardTerm(
    name="toy",
    measures="a constant 0.25 for any painting",
    needs_picture=True,
    build=lambda config: ToyClient(),
    measure=measure_toy,
    batched=True,
)


@pytest.fixture
def toy_term():
    register(TOY)
    yield TOY
    unregister(TOY.name)


async def test_a_registered_toy_term_reaches_reward_curves_store_artifacts_and_tables(
    toy_term, tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    # The one preset line: the toy's weight, taken from the aesthetic's so the weights still sum to 1.
    weights = {"gate": 0.05, "length": 0.05, "judge": 0.0, "aesthetic": 0.8, "toy": 0.1}
    config = load_config("offline", {"weights": weights, "run_dir": str(tmp_path)})
    engine = ScoringEngine(config.scoring, tmp_path, pool=browser_pool)
    try:
        parts = await engine.score([flower_sketch, "no sketch"], [0, 0], step=1)
    finally:
        await engine.aclose()
    painted, refused = parts
    assert painted.term("toy") == 0.25 and painted.details["toy"]["bytes"] > 0 and refused.term("toy") is None
    assert painted.backends["toy"] == "toy-v1" and refused.reward == 0.0
    expected = 0.05 + 0.05 * painted.term("length") + 0.8 * painted.term("aesthetic") + 0.1 * 0.25
    assert painted.reward == pytest.approx(expected)

    logged: dict[str, float] = {}
    log_means(logged.__setitem__, parts)
    assert logged["reward/toy"] == 0.25
    curves = CurvesFile(tmp_path)
    curves.append(curve_row(1, {"reward": 0.3, **logged}))
    assert curves.read()[0]["toy_mean"] == "0.25"

    store = RolloutStore(tmp_path, num_generations=2, preset="toy")
    store.record_batch(["p", "p"], [flower_sketch, "no sketch"], parts, {"trainer_state": TrainerState(global_step=0)})
    assert [row["toy"] for row in store.rows()] == [0.25, None]

    assert [row["toy"] for row in reward_rows(parts)] == [0.25, None]
    report = {"sides": {"base": side_stats(parts).__dict__, "adapter": side_stats(parts).__dict__}}
    assert any(line.startswith("toy mean") for line in format_evaluation(report).splitlines())


async def test_a_term_at_weight_zero_is_never_built_and_an_unregistered_weight_is_refused(
    toy_term, tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    engine = ScoringEngine(load_config("offline", {"run_dir": str(tmp_path)}).scoring, tmp_path, pool=browser_pool)
    try:
        (parts,) = await engine.score([flower_sketch], [0], step=None)
    finally:
        await engine.aclose()
    assert parts.term("toy") is None and parts.backends["toy"] == "off (weight 0)"
    unregister(TOY.name)
    try:
        with pytest.raises(ValueError, match="no reward term named toy"):
            load_config("offline", {"weights": {"aesthetic": 0.2, "toy": 0.1}})
        # A configuration built some other way meets the same refusal when the engine is built.
        unchecked = RunConfig.model_validate(
            {"name": "offline", "aesthetic": {}, "judge": {}, "weights": {"aesthetic": 0.2, "toy": 0.1}}
        )
        with pytest.raises(ValueError, match="no reward term named toy"):
            ScoringEngine(unchecked.scoring, tmp_path)
    finally:
        register(TOY)
