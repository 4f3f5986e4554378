"""Pipelined rollouts end to end on CPU: the tiny taught policy, real renders, early scoring, a run that fails in
step 3 with rows of step 4 in flight and is resumed. Each step trains on its own group, stored once, no row more than
the bound behind the weights that train it, every completion scored ahead, and the loss weighs its tokens by TRL's
truncated importance ratios."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import pytest

from deployments.presets import load_config
from tests.models import tiny_smoke_overrides
from watercolour.policy.generation import TRL_PATH
from watercolour.run_records.curves import CurvesFile
from watercolour.run_records.rollout_store import RolloutStore


STEPS = 4
GENERATIONS = 4
BOUND = 1
# TRL's path on CPU with early scoring on (the fast path's compiled decode step would compile C++ on a CPU).
EARLY_SCORED = replace(TRL_PATH, early_scoring=True)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A pipelined run failing on purpose in step 3 (after its rollouts were stored, before its update), then
    resumed from checkpoint 2; with the rows each generation left in flight for later steps."""
    run_dir = tmp_path_factory.mktemp("run")
    os.environ.setdefault("TRACKIO_DIR", str(run_dir / "trackio"))
    from watercolour.pipeline.rollouts import PipelinedRollouts
    from watercolour.training.launch import InjectedFault
    from watercolour.training.run import train

    overrides = {
        "training.pipeline.max_staleness": BOUND,
        "training.save_steps": 1,
        "training.learning_rate": 1e-2,
    }
    config = load_config("smoke", tiny_smoke_overrides(run_dir, STEPS, GENERATIONS, **overrides))
    in_flight: list[tuple[int, int]] = []  # (step generated, rows of later steps started and not yet trained)
    generate = PipelinedRollouts.generate

    def watched(self: PipelinedRollouts, trainer: Any, prompt_ids: list[list[int]]) -> Any:
        result = generate(self, trainer, prompt_ids)
        in_flight.append((trainer.state.global_step + 1, self.schedule.in_flight(trainer.state.global_step)))
        return result

    PipelinedRollouts.generate = watched  # type: ignore[method-assign]
    try:
        with pytest.raises(InjectedFault, match="step 3"):
            train(config, echo=False, fail_at_step=2, plan=EARLY_SCORED)
        failed_curves = CurvesFile(run_dir).read()
        train(config, resume=True, echo=False, plan=EARLY_SCORED)
    finally:
        PipelinedRollouts.generate = generate  # type: ignore[method-assign]
    return {"run_dir": run_dir, "in_flight": in_flight, "failed_curves": failed_curves}


def test_a_run_failing_with_rows_in_flight_resumes_without_a_duplicate_or_a_lost_group(resumed):
    run_dir, in_flight = resumed["run_dir"], resumed["in_flight"]
    # The failed run generated steps 1 to 3 and had started rows of step 4 when step 3 failed; the resumed run
    # decoded steps 3 and 4 afresh.
    assert [step for step, _ in in_flight] == [1, 2, 3, 3, 4]
    assert in_flight[2][1] > 0
    store = RolloutStore(run_dir, GENERATIONS)
    assert store.steps() == [1, 2, 3, 4]
    rows = store.rows()
    assert sorted((row["step"], row["index"]) for row in rows) == [
        (step, index) for step in range(1, STEPS + 1) for index in range(GENERATIONS)
    ]
    assert [int(row["step"]) for row in CurvesFile(run_dir).read()] == [1, 2, 3, 4]


def test_each_rollout_is_stored_with_the_weights_it_was_sampled_with_within_the_bound(resumed):
    rows = RolloutStore(resumed["run_dir"], GENERATIONS).rows()
    behind = {(row["step"], row["index"]): row["step"] - 1 - row["sampled_at"] for row in rows}
    assert set(behind.values()) <= set(range(BOUND + 1))
    # Rows of later steps started in the slots earlier rows freed: some were trained one update after their start.
    assert max(behind.values()) == BOUND
    # The first step after a start or a resume has nothing in flight to inherit: its rows are its own.
    assert all(behind[1, index] == 0 and behind[3, index] == 0 for index in range(GENERATIONS))
    curves = {int(row["step"]): row for row in CurvesFile(resumed["run_dir"]).read()}
    assert all(float(curves[step]["behind_max"]) <= BOUND for step in curves)


def test_the_loss_weighs_each_token_by_trls_importance_ratio_of_trained_to_sampling_weights(resumed):
    first = {int(row["step"]): row for row in resumed["failed_curves"]}[1]
    curves = {int(row["step"]): row for row in CurvesFile(resumed["run_dir"]).read()}
    # TRL computed the ratios (its vLLM correction's branch, which also multiplies them into the loss). Rows sampled
    # by the weights they train have a ratio of 1 at every token: the decoder kept what the update computes.
    assert float(first["importance_min"]) == pytest.approx(1.0, abs=1e-3)
    assert float(first["logp_gap_max"]) == pytest.approx(0.0, abs=1e-3)
    # A row begun before an update (at 1e-2 the tiny policy moves fast) has tokens the trained weights like less.
    stale = [step for step in curves if float(curves[step]["behind_max"]) > 0]
    assert stale and min(float(curves[step]["importance_min"]) for step in stale) < 0.99
    assert max(float(curves[step]["logp_gap_max"]) for step in stale) > 0.01


def test_every_completion_of_a_pipelined_run_is_scored_ahead(resumed):
    curves = CurvesFile(resumed["run_dir"]).read()
    assert [float(row["prefetched"]) for row in curves] == [1.0] * STEPS
