"""A reward from the static gate and the length ramp alone, for hosts that have no browser.

The GPU machine that proves the training path has no Chromium and no way to install one; this reward lets the
real trainer, rollout store and curves run there. It renders nothing, so it cannot see paint: it is never a
default and no preset names it; `scripts/gpu_proof.py` is its only user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ground.records import RewardParts
from ground.settings import ScoringSettings, Weights
from rewards.gate import static_check
from rewards.length import completion_text, length_score
from rewards.scoring.composite import OnScored
from rewards.scoring.scoring_engine import compose


# The gate and length weights of every preset are equal, so renormalised they are half each.
STATIC_WEIGHTS = Weights(gate=0.5, length=0.5, judge=0.0, aesthetic=0.0)


class StaticReward:
    """TRL reward: 0 for a sketch the static gate refuses, else 0.5 + 0.5 * length ramp. Picklable."""

    __name__ = "watercolour_static_reward"

    def __init__(self, settings: ScoringSettings, run_dir: Path, on_scored: OnScored | None = None) -> None:
        self.settings = settings
        self.run_dir = Path(run_dir)
        self.on_scored = on_scored

    async def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        parts = []
        for completion in completions:
            verdict = static_check(completion_text(completion), self.settings.gate)
            part = RewardParts(
                reward=None,
                terms={
                    "gate": float(verdict.passed),
                    "length": length_score(verdict.sketch) if verdict.passed else 0.0,
                },
                weights=STATIC_WEIGHTS.model_dump(),
                backends={"static": "static gate + length (no render)"},
                verdict=verdict,
            )
            part.reward = compose(part, STATIC_WEIGHTS.model_dump())
            parts.append(part)
        if self.on_scored is not None:
            self.on_scored(prompts, completions, parts, kwargs)
        return [part.reward for part in parts]

    async def aclose(self) -> None:
        """Nothing to close: no browser, no clients."""
