"""The one place a run's reward is made: TRL's one adapter (`rewards.scoring.composite.CompositeReward`) over the
scorer the run configuration chooses.

- `openenv` set: the OpenEnv painting server scores every rollout (`openenv_painting.scorer.OpenEnvScorer`); the
  server is where the work spreads out, so a Prefect fan-out on top would only add a hop and is not used;
- else, inside a Prefect run, the fan-out its training task supplies (`tasks.fanout.FannedScorer`: one task per
  group, with retries, visible in the UI);
- else the scoring engine in this process (`rewards.scoring.scoring_engine.ScoringEngine`).

The fan-out is passed in rather than imported: it lives with the Prefect tasks, on a floor above this one, and only
exists inside a Prefect run. Every route gets the same adapter: early scoring (`prefetch`), the subject, the group
seeds, the dead letters, the same parts for the same completion (tests/scoring/test_scoring_routes.py). A policy named by its
published shape (`shape:...`, a rehearsal) is scored on the bundled pool's sketches (`watercolour.rehearsal`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ground.run_config import RunConfig
from rewards.length import completion_text
from rewards.scoring.composite import CompositeReward, OnScored, Scorer
from rewards.scoring.scoring_engine import ScoringEngine
from watercolour.rehearsal.shapes import shape_name


# (config, run_dir) -> the Prefect fan-out's scorer: what a Prefect run's training task hands the trainer.
FanOut = Callable[[RunConfig, Path], Scorer]


def scorer_for(config: RunConfig, run_dir: Path, fan_out: FanOut | None = None) -> Scorer:
    """The run's scorer: the OpenEnv server, the Prefect fan-out, or the engine in this process, in that order."""
    if config.openenv is not None:
        from openenv_painting.scorer import OpenEnvScorer

        return OpenEnvScorer(config.openenv, config.weights.model_dump(), run_dir)
    if fan_out is not None:
        return fan_out(config, run_dir)
    return ScoringEngine(config.scoring, run_dir)


def describe(config: RunConfig, scorer: Scorer) -> str:
    """One line for the run's log: where its rollouts are scored."""
    if config.openenv is not None:
        return f"scoring: through the OpenEnv server at {config.openenv.url} (one session a rollout)"
    if isinstance(scorer, ScoringEngine):
        return "scoring: in this process (the scoring engine)"
    return "scoring: as Prefect tasks, one a group (the fan-out)"


def reward_for(
    config: RunConfig, run_dir: Path, on_scored: OnScored | None, fan_out: FanOut | None = None
) -> CompositeReward:
    """The reward function TRL is given: the adapter over `scorer_for`'s scorer."""
    text_of: Callable[[Any], str] = completion_text
    if shape_name(config.training.model) is not None:
        from watercolour.rehearsal.stand_in import PoolSketches

        text_of = PoolSketches()
    return CompositeReward(scorer_for(config, run_dir, fan_out), on_scored, text_of=text_of)
