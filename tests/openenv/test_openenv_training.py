"""Training through the OpenEnv server gives the rewards training in process gives, for the same seeds.

Two CPU runs of the taught tiny policy, two GRPO steps each, the same configuration and seed: one scores in
process (the engine behind the one reward adapter), the other sets `openenv.url` to a real painting server on 127.0.0.1 (uvicorn in a
thread, its own scoring engine, Chromium). Same completions in, same rewards out, rollout by rollout, and both
runs record every rollout with its picture."""

from __future__ import annotations

import os

import pytest

from deployments.presets import load_config
from openenv_painting.server.app import ServerSettings, serving
from tests.models import tiny_smoke_overrides
from watercolour.run_records.rollout_store import RolloutStore


STEPS = 2
GENERATIONS = 4

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def run(run_dir, extra):
    from watercolour.training.trainer import build_trainer, close_reward

    config = load_config(
        "smoke", tiny_smoke_overrides(run_dir, STEPS, GENERATIONS, **{"training.learning_rate": 1e-2, **extra})
    )
    trainer = build_trainer(config, run_dir, echo=False)
    try:
        trainer.train()
    finally:
        close_reward(trainer)
    return sorted(RolloutStore(run_dir, GENERATIONS).rows(), key=lambda row: (row["step"], row["index"]))


def test_a_run_through_the_openenv_server_gets_the_in_process_rewards(tmp_path):
    os.environ.setdefault("TRACKIO_DIR", str(tmp_path / "trackio"))
    in_process = run(tmp_path / "in-process", {})
    server_config = load_config("smoke", {"run_dir": str(tmp_path / "server"), "render.browsers": 1})
    with serving(server_config, ServerSettings(port=0, max_sessions=GENERATIONS)) as url:
        remote = run(tmp_path / "remote", {"openenv.url": url})

    assert len(in_process) == len(remote) == STEPS * GENERATIONS
    assert [row["completion"] for row in remote] == [row["completion"] for row in in_process]
    assert [row["reward"] for row in remote] == [row["reward"] for row in in_process]
    assert {row["passed"] for row in remote} == {True, False}, "the taught policy writes admitted and refused sketches"
    assert all(row["png"] for row in remote if row["passed"]), "the server's pictures reach the run's store"
