"""The one reward function TRL sees: a thin adapter from TRL's reward contract to the scoring engine.

TRL drops a rollout from its group only when EVERY reward function returns None for it, so the terms are not
separate reward functions: one composite returns what `rewards.scoring.scoring_engine` composed (None after an
infrastructure failure, with a dead letter; 0.0 for a sketch the gate refused; otherwise the weighted sum).
This adapter only translates: TRL's `trainer_state` into the rollout step (`records.rollout_step`), prompts
into group seeds, and the engine's parts into the `on_scored` hook (the rollout store) and TRL's `log_metric`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ground.records import RewardParts, rollout_step
from ground.settings import ScoringSettings
from rewards.length import completion_text
from rewards.scoring.cache import Renderer
from rewards.scoring.scoring_engine import ScoringEngine, log_means


OnScored = Callable[[list[Any], list[Any], list[RewardParts], dict[str, Any]], None]


def group_seed(prompt: Any, step: int | None) -> int:
    """One seed per (prompt, step): every rollout of a GRPO group faces the same judge references."""
    digest = hashlib.sha256(json.dumps([step, prompt], sort_keys=True, default=str).encode()).hexdigest()
    return int(digest[:8], 16)


def group_seeds(prompts: list[Any], step: int | None, kwargs: Mapping[str, Any]) -> list[int]:
    """The batch's group seeds: given explicitly (`group_seed=[...]`, evaluation) or from (prompt, step)."""
    if step is None and "group_seed" in kwargs:
        return [int(seed) for seed in kwargs["group_seed"]]
    return [group_seed(prompt, step) for prompt in prompts]


class CompositeReward:
    """TRL reward function: `await reward(prompts, completions, **kwargs) -> list[float | None]`.

    Picklable (the engine pickles without its live clients). `pool` lends a started renderer to the engine;
    `clients` overrides how a service term's client is built (tests count calls through it).
    """

    __name__ = "watercolour_reward"

    def __init__(
        self,
        settings: ScoringSettings,
        run_dir: Path,
        on_scored: OnScored | None = None,
        *,
        pool: Renderer | None = None,
        clients: Mapping[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.run_dir = Path(run_dir)
        self.on_scored = on_scored
        self.engine = ScoringEngine(settings, run_dir, pool=pool, clients=clients)

    def scored_text(self, completion: Any) -> str:
        """The text the engine scores for a completion (TRL's message list or a plain string)."""
        return completion_text(completion)

    async def prefetch(self, completion: Any, prompt: Any = None, **kwargs: Any) -> None:
        """Score a finished completion ahead of the batch's call (`watercolour.policy.early_scoring`).

        Given its `prompt` and its row's share of the call's keyword arguments (`trainer_state` and the dataset's
        columns, one value each), the engine scores its service terms ahead under the group seed and subject the
        call will derive; without a prompt it only gates and renders.
        """
        text = self.scored_text(completion)
        if prompt is None:
            await self.engine.prefetch(text)
            return
        # The call's own derivation, over a batch of this one row.
        step = rollout_step(kwargs.get("trainer_state"))
        (seed,) = group_seeds([prompt], step, {name: [value] for name, value in kwargs.items()})
        await self.engine.prefetch(text, seed=seed, subject=kwargs.get("subject"))

    async def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        step = rollout_step(kwargs.get("trainer_state"))
        seeds = group_seeds(prompts, step, kwargs)
        # The dataset's `subject` column (TRL passes dataset columns as keyword arguments, one value per rollout).
        subjects = kwargs.get("subject")
        parts = await self.engine.score([self.scored_text(c) for c in completions], seeds, step, subjects)
        if self.on_scored is not None:
            self.on_scored(prompts, completions, parts, kwargs)
        if "log_metric" in kwargs:
            log_means(kwargs["log_metric"], parts)
        return [part.reward for part in parts]

    async def aclose(self) -> None:
        await self.engine.aclose()
