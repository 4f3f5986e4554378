"""Repaint training through the OpenEnv server gets the episodes and rewards of training in process.

Two one-step CPU runs of the taught tiny painter on the `repaint` preset, the same configuration and seed: one paints
in process (`EpisodeFactory`), the other sets `openenv.url` to a real painting server on 127.0.0.1 (uvicorn in a
thread, its own scoring engine, Chromium), so TRL's `environment_factory` is `RemoteEpisodeFactory`. Same sketches
in, same observations and rewards out, turn by turn, and the server's pictures land in the run's store."""

from __future__ import annotations

import os

import pytest

from deployments.presets import load_config
from openenv_painting.server.app import ServerSettings, serving
from tests.models import tiny_painter
from watercolour.run_records.rollout_store import RolloutStore


GENERATIONS = 2

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def overrides(run_dir) -> dict:
    return {
        "run_dir": str(run_dir),
        "training.model": str(tiny_painter()),
        "training.steps": 1,
        "training.num_generations": GENERATIONS,
        "training.per_device_batch_size": GENERATIONS,
        "training.gradient_accumulation_steps": 1,
        "training.max_completion_length": 1536,
        "training.learning_rate": 1e-2,
        "repaint.warm_start_examples": 0,
        "render.browsers": 1,
    }


def run(run_dir, extra):
    from watercolour.training.trainer import build_trainer, close_reward

    trainer = build_trainer(load_config("repaint", {**overrides(run_dir), **extra}), run_dir, echo=False)
    try:
        trainer.train()
    finally:
        close_reward(trainer)
    rows = RolloutStore(run_dir, GENERATIONS).rows()
    return sorted(rows, key=lambda row: (row["step"], row["index"], row.get("turn") or 0)), trainer


def test_repaint_training_through_the_server_matches_training_in_process(tmp_path):
    os.environ.setdefault("TRACKIO_DIR", str(tmp_path / "trackio"))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    in_process, _ = run(tmp_path / "in-process", {})
    server_config = load_config("repaint", overrides(tmp_path / "server"))
    with serving(server_config, ServerSettings(port=0, max_sessions=GENERATIONS)) as url:
        remote, trainer = run(tmp_path / "remote", {"openenv.url": url})

    from openenv_painting.remote_env import RemoteEpisodeFactory

    assert isinstance(trainer.reward_funcs[0].factory, RemoteEpisodeFactory), "TRL's episodes were the server's"
    assert len(remote) == len(in_process) >= GENERATIONS
    for field in ("completion", "turn", "observation", "reward", "episode_reward", "passed"):
        assert [row.get(field) for row in remote] == [row.get(field) for row in in_process], field
    assert any(row.get("turn") == 2 for row in remote), "episodes of two paintings"
    assert all(row["png"] for row in remote if row["passed"]), "the server's pictures reach the run's store"
