"""Pipelined rollouts' importance correction from the loss's own forward against TRL's own path: the same run twice
on CPU, once with TRL's extra forward of the group before each update and once without it. Same ratios, same
losses, same gradients; and the forward without gradients is gone."""

from __future__ import annotations

import os
from typing import Any

import pytest

from deployments.presets import load_config
from tests.models import tiny_smoke_overrides
from watercolour.policy.generation import TRL_PATH
from watercolour.run_records.curves import CurvesFile


STEPS = 3
GENERATIONS = 4
COMPARED = ("importance_min", "importance_mean", "logp_gap_mean", "logp_gap_max")  # columns of the curves

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def pipelined_run(tmp_path_factory: pytest.TempPathFactory, trls_forward: bool) -> dict[str, Any]:
    """A pipelined run of the tiny policy (rows up to one update behind, a learning rate that moves it): its curves,
    each step's loss and gradient norm as logged, and how many policy forwards ran without gradients."""
    from trl import GRPOTrainer

    from watercolour.pipeline import importance
    from watercolour.training.run import train

    run_dir = tmp_path_factory.mktemp("trl" if trls_forward else "loss")
    os.environ.setdefault("TRACKIO_DIR", str(run_dir / "trackio"))
    overrides = {"training.pipeline.max_staleness": 1, "training.learning_rate": 1e-2}
    config = load_config("smoke", tiny_smoke_overrides(run_dir, STEPS, GENERATIONS, **overrides))
    forwards = {"without gradients": 0, "with gradients": 0}
    logged: list[dict[str, float]] = []
    logps, log = GRPOTrainer._get_per_token_logps_and_entropies, GRPOTrainer.log
    from_loss = importance.from_loss

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        import torch

        forwards["with gradients" if torch.is_grad_enabled() else "without gradients"] += 1
        return logps(self, *args, **kwargs)

    def recorded(self: Any, logs: dict[str, float], *args: Any, **kwargs: Any) -> Any:
        if "loss" in logs:
            logged.append({"loss": logs["loss"], "grad_norm": logs["grad_norm"]})
        return log(self, logs, *args, **kwargs)

    GRPOTrainer._get_per_token_logps_and_entropies = counted  # type: ignore[method-assign]
    GRPOTrainer.log = recorded  # type: ignore[method-assign]
    if trls_forward:
        importance.from_loss = lambda trainer: None  # TRL's own path: its forward before the update
    try:
        train(config, echo=False, plan=TRL_PATH)
    finally:
        GRPOTrainer._get_per_token_logps_and_entropies = logps  # type: ignore[method-assign]
        GRPOTrainer.log = log  # type: ignore[method-assign]
        importance.from_loss = from_loss
    return {"curves": CurvesFile(run_dir).read(), "logged": logged, "forwards": forwards}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return {
        "trl": pipelined_run(tmp_path_factory, trls_forward=True),
        "loss": pipelined_run(tmp_path_factory, trls_forward=False),
    }


def test_the_ratios_losses_and_gradients_are_trls(runs):
    trl, loss = runs["trl"]["curves"], runs["loss"]["curves"]
    assert [row["step"] for row in trl] == [row["step"] for row in loss] == [str(step) for step in range(1, STEPS + 1)]
    for ours, theirs in zip(loss, trl, strict=True):
        assert ours["completion_mean"] == theirs["completion_mean"]  # the same rows were drawn
        for column in COMPARED:
            assert float(ours[column]) == pytest.approx(float(theirs[column]), rel=1e-3, abs=1e-5), (
                ours["step"],
                column,
            )
    trl_logged, loss_logged = runs["trl"]["logged"], runs["loss"]["logged"]
    assert len(trl_logged) == len(loss_logged) == STEPS
    for ours, theirs in zip(loss_logged, trl_logged, strict=True):
        assert ours["loss"] == pytest.approx(theirs["loss"], rel=1e-3, abs=1e-6)
        assert ours["grad_norm"] == pytest.approx(theirs["grad_norm"], rel=1e-3)
        assert ours["grad_norm"] > 0
    # The comparison weighs something: rows a step behind carry ratios away from 1, and the first step's are 1.
    assert float(loss[0]["importance_min"]) == pytest.approx(1.0, abs=1e-3)
    assert min(float(row["importance_min"]) for row in loss[1:]) < 0.99


def test_the_forward_without_gradients_before_each_update_is_gone(runs):
    trl, loss = runs["trl"]["forwards"], runs["loss"]["forwards"]
    assert trl["without gradients"] >= STEPS  # TRL's: one or more a step
    assert loss["without gradients"] == 0
    assert loss["with gradients"] == trl["with gradients"] > 0  # the loss's forwards, one a micro-batch
