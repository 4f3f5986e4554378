"""The settings each scoring layer takes: the reward's weights, the renderer's and the gate's, `RewardSettings`
(those, and each service term's own settings under its name) and `ScoringSettings`, the whole of what the scoring
engine reads. A service term's settings model lives in the term's own module (`rewards.term`).

They sit on the ground floor so that a reward term, the renderer and the run configuration (`ground.run_config`)
all name the same types while no reward term ever sees the run configuration: the engine is given a
`ScoringSettings` (`RunConfig.scoring`), and each term reads its own part of it. Nothing here reads the
environment: secrets are read by the backends when they are called, through the variable names held here.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ground.prompt import ALLOWLIST, DEFAULT_SUBJECT


# A weight of 1 split four ways is not exact in binary; anything closer than this is a sum of 1.
WEIGHT_SUM_TOLERANCE = 1e-6


class Weights(BaseModel):
    """How the terms of the reward mix once the gate has passed; they sum to 1. A term registered in
    `rewards.scoring.terms` beyond these four takes its weight under its own name (e.g. `weights: {toy: 0.1, ...}`);
    that the name is a registered term is checked where the registry is known (`rewards.scoring.terms.resolve_terms`:
    when a preset is loaded and when an engine is built)."""

    model_config = ConfigDict(extra="allow")

    gate: float = Field(default=0.05, ge=0, le=1, description="Paid to every sketch the gate admits.")
    length: float = Field(default=0.05, ge=0, le=1, description="Times the length ramp L (0..1).")
    judge: float = Field(default=0.60, ge=0, le=1, description="Times the pairwise judge's win share J (0..1).")
    aesthetic: float = Field(default=0.30, ge=0, le=1, description="Times the aesthetic score A (0..1).")

    @model_validator(mode="after")
    def _sum_to_one(self) -> Weights:
        extra = self.model_extra or {}
        if any(not isinstance(value, int | float) or not 0 <= value <= 1 for value in extra.values()):
            raise ValueError(f"every weight is a number in 0..1, got {extra}")
        total = self.gate + self.length + self.judge + self.aesthetic + sum(extra.values())
        if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
            raise ValueError(f"weights must sum to 1, got {total:.6f} ({self.model_dump()})")
        return self


class RenderSettings(BaseModel):
    """How sketches are rendered for the reward."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(
        default=0,
        description="The render seed of every rollout. Fixed, so a sketch's picture (and reward) depends only on "
        "its code: GRPO compares siblings, and a per-rollout seed would add noise the policy cannot control.",
    )
    size: int = Field(default=600, gt=0, description="Canvas width and height in pixels the prompt asks for.")
    deadline_s: float = Field(default=30.0, gt=0, description="Hard deadline per render; the page is killed after.")
    browsers: int = Field(
        default=2,
        ge=1,
        description="Warm Chromium processes in the render pool: the run's total, so each of N training processes "
        "(accelerate/torchrun) starts max(1, browsers // N).",
    )
    pages_per_browser: int = Field(default=2, ge=1, description="Concurrent pages (sketches) per browser.")


class GateSettings(BaseModel):
    """The gate's limits; one per run, part of the run configuration."""

    allowlist: tuple[str, ...] = Field(
        default=ALLOWLIST, description="brush methods a sketch may name; the prompt lists the same ones."
    )
    # The published policy's sketches ran about 1-3k tokens (~4-12k characters). 24k characters is where the length
    # ramp's runaway cap sits (6000 tokens at 4 characters a token), so the gate and the ramp agree on "too long",
    # and a padded or runaway sketch is refused before the parser or Chromium spends time on it.
    max_source_chars: int = Field(default=24_000, description="Longest sketch admitted, in characters.")
    # Coverage counts pixels more than 16 levels from the modal paper colour. Measured on the pool's renderer:
    # the five-petal test flower covers 0.21, one lone radius-30 disc 0.003, an empty or off-canvas sketch 0.
    # 0.01 (a disc of ~34 px radius) refuses a dot or a sketch that died early, and is far below any flower.
    coverage_floor: float = Field(default=0.01, description="Least share of the canvas that must be paint.")
    read_text: bool = Field(
        default=True,
        description="Refuse pictures that hold writing, read by Tesseract or found by its shape by a text detector "
        "(`text_in_picture`); needs Debian's tesseract-ocr and onnxruntime. Off only where they cannot be installed: "
        "painted words then pass the gate.",
    )
    deadline_s: float = Field(
        default=300.0,
        description="Longest one gate call waits for the renderer, queueing included. The pool kills a page at its "
        "own deadline, so running past this means the renderer is stuck: RendererUnavailable, never a verdict.",
    )


class RewardSettings(BaseModel):
    """The reward's settings, declared once: the run configuration (`ground.run_config.RunConfig`) and the engine's
    `ScoringSettings` are both made of them.

    Beyond these fields, each service term's settings sit under the term's name (`aesthetic`, `judge`, a new
    term's), as its own model declares them (`rewards.term.RewardTerm.settings_of`). A name that is no registered
    term is refused where the registry is known (`rewards.scoring.terms.resolve_terms`: when a preset loads and
    when an engine is built)."""

    model_config = ConfigDict(extra="allow")

    weights: Weights = Field(default_factory=Weights, description="Reward weights.")
    gate: GateSettings = Field(default_factory=GateSettings, description="The admission gate.")
    render: RenderSettings = Field(default_factory=RenderSettings, description="Rendering for the reward.")
    pool_dir: Path | None = Field(default=None, description="Reference pool directory; None = the bundled pool.")


class ScoringSettings(RewardSettings):
    """What the scoring engine and its terms read: the run configuration's scoring half (`RunConfig.scoring`)."""

    subject: str = Field(default=DEFAULT_SUBJECT, description="What a rollout was asked to paint, unless it says.")
    run_dir: Path = Field(
        default=Path("runs/scoring"),
        description="The run's directory, where a term that keeps state keeps it (the judge's curriculum).",
    )
