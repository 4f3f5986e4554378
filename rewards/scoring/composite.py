"""The one reward function TRL sees, and the one interface every way of scoring sits behind.

TRL drops a rollout from its group only when EVERY reward function returns None for it, so the terms are not
separate reward functions: one composite returns what the scoring engine composed (None after an infrastructure
failure, with a dead letter; 0.0 for a sketch the gate refused; otherwise the weighted sum).

What scores is a `Scorer`: texts, group seeds, the step and the subjects in, one `RewardParts` each out, plus
`prefetch` (one finished completion scored ahead of its batch, `watercolour.policy.early_scoring`). Three of them
exist: the engine in this process (`rewards.scoring.scoring_engine.ScoringEngine`), the Prefect fan-out
(`tasks.fanout.FannedScorer`: a task per group) and the OpenEnv server (`openenv_painting.scorer.OpenEnvScorer`).
`watercolour.training.scoring_route.scorer_for` chooses one from the run configuration. This adapter is the same
over each: it turns TRL's trainer state into the rollout step (`records.rollout_step`), prompts into group seeds, the
dataset's `subject` column into subjects, and hands the parts to the `on_scored` hook (the rollout store) and TRL's
`log_metric`; `prefetch` derives the same seed and subject for one row, so a route scores ahead what its call will
ask for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ground.records import RewardParts, rollout_step
from rewards.length import completion_text
from rewards.scoring.scoring_engine import log_means


# What the adapter hands each scored batch to: (prompts, completions, parts, TRL's keyword arguments).
OnScored = Callable[[list[Any], list[Any], list[RewardParts], dict[str, Any]], None]


class Scorer(Protocol):
    """Scores completions into `RewardParts`; where the work happens is the implementation's business."""

    async def score(
        self,
        completions: Sequence[str],
        seeds: Sequence[int],
        step: int | None,
        subjects: Sequence[str | None] | None = None,
    ) -> list[RewardParts]:
        """The parts of each completion, in order: a dead letter and a None reward for what could not be measured."""
        ...

    async def prefetch(
        self, completion: str, *, seed: int | None = None, step: int | None = None, subject: str | None = None
    ) -> None:
        """Score `completion` ahead of the batch that will hold it (only render it, without a seed). Records
        nothing: a failure here is met again, with its retries and dead letter, by `score`."""
        ...

    async def aclose(self) -> None:
        """Close what the scorer opened (browsers, clients, sessions)."""
        ...


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
    """TRL reward function: `await reward(prompts, completions, **kwargs) -> list[float | None]`, over a `Scorer`.

    `text_of` turns a completion (TRL's message list or a plain string) into the text that is scored; a rehearsal
    scores stand-in sketches instead of a random policy's tokens (`watercolour.rehearsal.stand_in`).
    """

    __name__ = "watercolour_reward"

    def __init__(
        self,
        scorer: Scorer,
        on_scored: OnScored | None = None,
        *,
        text_of: Callable[[Any], str] = completion_text,
    ) -> None:
        self.scorer = scorer
        self.on_scored = on_scored
        self.text_of = text_of
        # The texts handed to `prefetch` and not yet scored by a call: the call logs the share of its batch scored
        # ahead. Pipelined rollouts hand in texts of the next steps' batches too, which a call leaves for theirs.
        self._ahead: set[str] = set()

    async def prefetch(self, completion: Any, prompt: Any = None, **kwargs: Any) -> None:
        """Score a finished completion ahead of the batch's call (`watercolour.policy.early_scoring`).

        Given its `prompt` and its row's share of the call's keyword arguments (`trainer_state` and the dataset's
        columns, one value each), the scorer answers its service terms ahead under the group seed and subject the
        call will derive; without a prompt it only gates and renders.
        """
        text = self.text_of(completion)
        self._ahead.add(text)
        if prompt is None:
            await self.scorer.prefetch(text)
            return
        # The call's own derivation, over a batch of this one row.
        step = rollout_step(kwargs.get("trainer_state"))
        (seed,) = group_seeds([prompt], step, {name: [value] for name, value in kwargs.items()})
        await self.scorer.prefetch(text, seed=seed, step=step, subject=kwargs.get("subject"))

    async def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        step = rollout_step(kwargs.get("trainer_state"))
        seeds = group_seeds(prompts, step, kwargs)
        # The dataset's `subject` column (TRL passes dataset columns as keyword arguments, one value per rollout).
        subjects = kwargs.get("subject")
        texts = [self.text_of(c) for c in completions]
        ahead = self._ahead
        self._ahead = ahead - set(texts)
        parts = await self.scorer.score(texts, seeds, step, subjects)
        if self.on_scored is not None:
            self.on_scored(prompts, completions, parts, kwargs)
        if "log_metric" in kwargs:
            log_means(kwargs["log_metric"], parts)
            # Whether early scoring reached this route: the share of the batch its scorer was asked ahead.
            kwargs["log_metric"]("scoring/prefetched", sum(text in ahead for text in texts) / max(1, len(texts)))
        return [part.reward for part in parts]

    async def aclose(self) -> None:
        await self.scorer.aclose()
