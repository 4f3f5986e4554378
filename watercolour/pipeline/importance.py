"""TRL's truncated importance correction for pipelined rollouts, its ratios taken from the loss's own forward.

TRL's correction (GRPOTrainer's vLLM branch, mode `token_truncate`) runs, before the update, a forward of the whole
group without gradients under the weights about to be trained, for one number a token: its log-probability under
those weights, `trained`. The loss then weighs each token by `clamp(exp(trained - sampled), max=cap)`, `sampled`
being the log-probability the token was drawn with. With one update per generation (TRL's `num_iterations` 1 and
its generation aligned with the accumulation), each micro-batch's loss forward reads the same weights again: the
extra forward computes, without gradients, what the loss computes anyway. At the recipe's shape on one H100 it made
the update 0.71 ms a token against 0.55 for the synchronous route in the same lease (`docs/gpu.md`).

So here generation leaves that forward out, and each micro-batch's ratios come from its loss forward's own
log-probabilities, detached: TRL's formula, bounds and mask, put where TRL's loss reads them
(`inputs["importance_sampling_ratio"]`, multiplied in by TRL), and logged under TRL's metric names. Where TRL needs
its old log-probabilities for another reason (several iterations per generation, or a mode other than a per-token
truncation), `from_loss` returns None and TRL keeps its own path.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch


# The TRL mode this reproduces: a ratio per token, clamped.
MODE = "token_truncate"
# TRL's metrics of its correction, written once a step over every micro-batch's tokens.
RATIO_MIN = "sampling/importance_sampling_ratio/min"
RATIO_MEAN = "sampling/importance_sampling_ratio/mean"
RATIO_MAX = "sampling/importance_sampling_ratio/max"
GAP_MEAN = "sampling/sampling_logp_difference/mean"
GAP_MAX = "sampling/sampling_logp_difference/max"


def from_loss(trainer: Any) -> ImportanceFromLoss | None:
    """The correction taken from the loss's forward, where it equals TRL's; None where TRL must keep its forward."""
    args = trainer.args
    aligned = args.gradient_accumulation_steps % (args.steps_per_generation * trainer.num_iterations) == 0
    if not aligned or not trainer.vllm_importance_sampling_correction or trainer.vllm_importance_sampling_mode != MODE:
        return None
    return ImportanceFromLoss(trainer.vllm_importance_sampling_clip_min, trainer.vllm_importance_sampling_clip_max)


class ImportanceFromLoss:
    """Leaves TRL's forward out of generation, and weighs the loss's tokens from the loss's own forward."""

    def __init__(self, clip_min: float | None, clip_max: float | None) -> None:
        self.clip_min = clip_min
        self.clip_max = clip_max
        self.inputs: dict[str, Any] | None = None  # the micro-batch whose loss forward comes next
        self.stats: list[torch.Tensor] = []  # a step's micro-batches: tokens, gap sum, gap max, ratio min/sum/max

    @contextmanager
    def generating(self, trainer: Any) -> Iterator[None]:
        """TRL's generation and scoring without its forward (and its ratios): the sampling log-probabilities stay."""
        correcting, trainer.vllm_importance_sampling_correction = trainer.vllm_importance_sampling_correction, False
        try:
            yield
        finally:
            trainer.vllm_importance_sampling_correction = correcting

    @contextmanager
    def in_loss(self, inputs: dict[str, Any]) -> Iterator[None]:
        """The next policy forward is this micro-batch's loss forward: its log-probabilities give the ratios."""
        wanted = "sampling_per_token_logps" in inputs and "importance_sampling_ratio" not in inputs
        self.inputs = inputs if wanted else None
        try:
            yield
        finally:
            self.inputs = None

    def weigh(self, per_token_logps: torch.Tensor) -> None:
        """TRL's truncated ratio per token, from the loss forward's log-probabilities, into the micro-batch."""
        inputs, self.inputs = self.inputs, None  # the loss's first forward only
        if inputs is None:
            return
        trained = per_token_logps.detach()
        sampled = inputs["sampling_per_token_logps"]
        mask = (
            inputs["completion_mask"] if "tool_mask" not in inputs else inputs["completion_mask"] * inputs["tool_mask"]
        )
        # As TRL: a token whose sampling log-probability is missing (NaN) gets a ratio of exactly 1.
        ratio = torch.exp(torch.nan_to_num((trained - sampled) * mask, nan=0.0))
        ratio = torch.clamp(ratio, min=self.clip_min, max=self.clip_max)
        inputs["importance_sampling_ratio"] = ratio
        counted = mask.bool() & ~torch.isnan(sampled)
        gap = (trained - sampled).abs()[counted]
        kept = ratio[mask.bool()]
        self.stats.append(
            torch.stack(
                [
                    torch.tensor(float(gap.numel()), device=gap.device),
                    gap.sum(),
                    gap.max() if gap.numel() else gap.new_zeros(()),
                    kept.min() if kept.numel() else kept.new_ones(()),
                    kept.sum(),
                    kept.max() if kept.numel() else kept.new_ones(()),
                    torch.tensor(float(kept.numel()), device=gap.device),
                ]
            ).float()
        )

    def step_metrics(self, gather: Any) -> dict[str, float]:
        """TRL's metrics of the correction over the step's micro-batches (and processes, through `gather`); then
        the next step starts afresh. Empty where no loss was weighed."""
        if not self.stats:
            return {}
        rows = gather(torch.stack(self.stats)).reshape(-1, 7)
        self.stats = []
        tokens, ratios = rows[:, 0].sum().clamp(min=1.0), rows[:, 6].sum().clamp(min=1.0)
        return {
            RATIO_MIN: rows[:, 3].min().item(),
            RATIO_MEAN: (rows[:, 4].sum() / ratios).item(),
            RATIO_MAX: rows[:, 5].max().item(),
            GAP_MEAN: (rows[:, 1].sum() / tokens).item(),
            GAP_MAX: rows[:, 2].max().item(),
        }
