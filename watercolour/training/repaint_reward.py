"""The TRL glue of repaint training: the episode reward function, the step clock, and the trainer's extra settings.

Why repaint has a reward function of its own rather than the one adapter (`rewards.scoring.composite`): an episode's
paintings are scored while the episode runs, by its environment's `paint` tool (that score is the observation the
policy reads before painting again), so by the time TRL calls the reward there is nothing left to score, only each
episode's reward to read. The environment scores through the same engine (or, with `openenv` set, the same server)
as the adapter's scorers, so the parts are the same for the same painting.

TRL calls a reward function after each batch's tool loop with the batch's environments (`environments=[...]`);
`RepaintReward` hands GRPO each episode's reward (`PaintingEnv.reward`: None after an infrastructure failure on any
turn, whose dead letter the engine has written), records every turn in the rollout store and logs the term means
of the final paintings and how often the last painting beat the first. The environments score on TRL's async loop
(`paint` is async), the loop the engine's clients are bound to, and `close_episodes` closes them there.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from episodes.painting_env import EpisodeFactory
from ground.records import RewardParts
from ground.run_config import RunConfig
from rewards.scoring.composite import OnScored
from rewards.scoring.scoring_engine import ScoringEngine, log_means
from watercolour.run_records.rollout_store import RolloutStore


class RepaintReward:
    """TRL reward function over environments: `reward(prompts, completions, environments, **kwargs)`."""

    __name__ = "watercolour_repaint_reward"

    def __init__(
        self, factory: EpisodeFactory, store: RolloutStore | None = None, on_step: OnScored | None = None
    ) -> None:
        """`on_step` is called after each step's episodes are recorded, with each episode's final painting's parts,
        as a single-turn reward's `on_scored` (the Prefect flow's step artifacts and its `fail_at_step`)."""
        self.factory = factory
        self.store = store
        self.on_step = on_step

    def __call__(
        self, prompts: list[Any], completions: list[Any], environments: list[Any], **kwargs: Any
    ) -> list[float | None]:
        if self.store is not None:
            self.store.record_episodes(prompts, completions, environments, kwargs)
        if self.on_step is not None:
            self.on_step(prompts, completions, [final_parts(env) for env in environments], kwargs)
        if "log_metric" in kwargs:
            log_metric = kwargs["log_metric"]
            log_means(log_metric, [env.turns[-1].parts for env in environments if env.turns])
            log_metric("repaint/turns_mean", sum(len(env.turns) for env in environments) / len(environments))
            gains = [last_beats_first(env.turns) for env in environments if len(env.turns) > 1]
            measured = [gain for gain in gains if gain is not None]
            if measured:
                log_metric("repaint/last_beats_first", sum(measured) / len(measured))
        return [env.reward for env in environments]


def final_parts(env: Any) -> RewardParts:
    """The episode's last painting's parts; for an episode that never painted, its reward with a failed gate."""
    return env.turns[-1].parts if env.turns else RewardParts(reward=env.reward, terms={"gate": 0.0})


def last_beats_first(turns: list[Any]) -> bool | None:
    """Whether the episode's last painting scored above its first; None when either could not be measured."""
    first, last = turns[0].parts.reward, turns[-1].parts.reward
    return None if first is None or last is None else last > first


class StepClock(TrainerCallback):
    """Gives the episode factory the trainer's state at each step, so episodes number their step like the store."""

    def __init__(self, factory: EpisodeFactory) -> None:
        self.factory = factory

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.factory.trainer_state = state


def episode_factory(config: RunConfig, run_dir: Any) -> Any:
    """The run's environment factory: on one scoring engine of its own, or through the OpenEnv server when
    `openenv` is set (`openenv_painting.remote_env.RemoteEpisodeFactory`: the same tools and episode reward)."""
    assert config.repaint is not None, "a repaint run has repaint settings"
    if config.openenv is not None:
        from openenv_painting.remote_env import RemoteEpisodeFactory

        return RemoteEpisodeFactory(config.openenv, config.repaint)
    return EpisodeFactory(ScoringEngine(config.scoring, run_dir), config.repaint)


def close_episodes(factory: Any, loop: Any) -> None:
    """Close what the episodes opened (the engine's browsers, or the server's sessions) on the trainer's loop,
    where `paint` opened them."""
    import asyncio

    asyncio.run_coroutine_threadsafe(factory.aclose(), loop).result()
