"""The settings each scoring layer takes: the reward's weights, the renderer's, the gate's, the aesthetic scorer's
and the judge's, and `ScoringSettings`, the whole of what the scoring engine reads.

They sit on the ground floor so that a reward term, the renderer and the run configuration (`ground.run_config`)
all name the same types while no reward term ever sees the run configuration: the engine is given a
`ScoringSettings` (`RunConfig.scoring`), and each term reads its own part of it. Nothing here reads the
environment: secrets are read by the backends when they are called, through the variable names held here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ground.prompt import ALLOWLIST, DEFAULT_SUBJECT


# A weight of 1 split four ways is not exact in binary; anything closer than this is a sum of 1.
WEIGHT_SUM_TOLERANCE = 1e-6


class Weights(BaseModel):
    """How the terms of the reward mix once the gate has passed; they sum to 1. A term registered in
    `rewards.scoring.terms` beyond these four takes its weight under its own name (e.g. `weights: {toy: 0.1, ...}`);
    that the name is a registered term is checked where the registry is known (`rewards.scoring.terms.check_weights`:
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
        description="Refuse pictures in which Tesseract reads letters or digits (`text_in_picture`); needs Debian's "
        "tesseract-ocr. Off only where it cannot be installed: painted words then pass the gate.",
    )
    deadline_s: float = Field(
        default=300.0,
        description="Longest one gate call waits for the renderer, queueing included. The pool kills a page at its "
        "own deadline, so running past this means the renderer is stuck: RendererUnavailable, never a verdict.",
    )


class AestheticSettings(BaseModel):
    """How rollouts get their aesthetic score."""

    backend: Literal["hpsv3", "offline"] = Field(
        default="offline",
        description="'hpsv3': the scorer service over HTTP; 'offline': the image-statistics stand-in.",
    )
    url: str | None = Field(default=None, description="Scorer service base URL (e.g. a Space URL); needed by hpsv3.")
    prompt: str = Field(
        default="a loose watercolour flower",
        description="Text prompt HPSv3 scores against. Generic beats naming the subject: it keeps quality rungs in order.",
    )
    timeout_s: float = Field(default=90.0, gt=0, description="Read timeout of one scoring request, in seconds.")
    attempts: int = Field(default=4, ge=1, description="Attempts per request before the score is unavailable.")
    backoff_s: float = Field(default=2.0, ge=0, description="Base of the jittered exponential backoff, in seconds.")
    max_concurrency: int = Field(default=4, ge=1, description="Scoring requests in flight at once, per client.")
    batch_size: int = Field(default=8, ge=1, description="Images per scoring request.")
    token_env: str = Field(
        default="HF_TOKEN", description="Name of the env var holding a bearer token (read when the client is built)."
    )


DEFAULT_CRITERIA = (
    "Reward what only watercolour does well: pigment that bleeds softly into wet paper, translucent washes layered "
    "so the lower ones glow through, edges that vary from crisp to dissolved, white paper left to breathe, and a "
    "composition that looks chosen. Penalise muddy or opaque colour, flat single-tone fills, mechanical repeated "
    "strokes, uniformly hard outlines and canvases that are nearly empty."
)


class CurriculumSettings(BaseModel):
    """The reference curriculum (`rewards.judging.curriculum`); off by default, on in the `curriculum` preset."""

    enabled: bool = Field(default=False, description="Draw references by difficulty instead of by tier at random.")
    target_win_rate: float = Field(
        default=0.5, gt=0, lt=1, description="Judge win rate the draw steers towards (1/2: as often won as lost)."
    )
    window_steps: int = Field(default=3, ge=1, description="Recent steps whose mean judge score is the win rate.")
    gain: float = Field(default=1.5, ge=0, description="How far the wanted difficulty moves per unit of win-rate gap.")
    spread: float = Field(default=0.2, gt=0, description="Width of the preference around the wanted difficulty.")
    challengers: int = Field(
        default=4, ge=1, description="Pool paintings each reference is compared with when its difficulty is measured."
    )


class JudgeSettings(BaseModel):
    """How rollouts are compared with the reference pool (or, in `group` mode, with each other)."""

    backend: Literal["openai", "offline"] = Field(
        default="offline", description="'openai': an OpenAI-compatible VLM endpoint; 'offline': the stats stand-in."
    )
    base_url: str | None = Field(
        default=None, description="OpenAI-compatible base URL, e.g. https://router.huggingface.co/v1 or a vLLM server."
    )
    model: str = Field(default="Qwen/Qwen3-VL-30B-A3B-Instruct", description="Model id sent with every request.")
    references: int = Field(default=4, ge=1, description="References each painting is compared with.")
    mix: dict[str, float] = Field(
        default_factory=lambda: {"love": 0.5, "okay": 0.5},
        description="Share of references per pool tier, renormalised over the tiers the pool has.",
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Read timeout of one judge call, in seconds.")
    attempts: int = Field(default=4, ge=1, description="Attempts per call before that comparison is unresolved.")
    backoff_s: float = Field(default=2.0, ge=0, description="Base of the jittered exponential backoff, in seconds.")
    max_concurrency: int = Field(default=8, ge=1, description="Judge calls in flight at once, per judge.")
    max_tokens: int = Field(default=220, ge=16, description="Reply budget; the winner comes first so it survives.")
    token_env: str = Field(default="HF_TOKEN", description="Name of the env var holding the API key (read at build).")
    criteria: str = Field(default=DEFAULT_CRITERIA, description="What makes a better watercolour, in the prompt.")
    mode: Literal["references", "group"] = Field(
        default="references",
        description="'references': each painting against k pool references; 'group': the group's paintings against "
        "each other, the term being each one's win rate in its group (rewards.judging.group_judging).",
    )
    pairing: Literal["round-robin", "ring"] = Field(
        default="round-robin", description="Group mode: every pair (G(G-1) calls) or a seeded ring (2 G m calls)."
    )
    ring_neighbours: int = Field(default=2, ge=1, description="Group mode, ring pairing: neighbours m per painting.")
    anchor: bool = Field(default=False, description="Group mode: also compare each painting with one drawn reference.")
    curriculum: CurriculumSettings = Field(
        default_factory=CurriculumSettings,
        description="References mode: draw them by difficulty (rewards.judging.curriculum).",
    )


class ScoringSettings(BaseModel):
    """What the scoring engine and its terms read: the run configuration's scoring half (`RunConfig.scoring`)."""

    model_config = ConfigDict(extra="forbid")

    weights: Weights = Field(default_factory=Weights, description="Reward weights.")
    aesthetic: AestheticSettings = Field(default_factory=AestheticSettings, description="The aesthetic scorer.")
    judge: JudgeSettings = Field(default_factory=JudgeSettings, description="The pairwise judge.")
    gate: GateSettings = Field(default_factory=GateSettings, description="The admission gate.")
    render: RenderSettings = Field(default_factory=RenderSettings, description="Rendering for the reward.")
    pool_dir: Path | None = Field(default=None, description="Reference pool directory; None = the bundled pool.")
    subject: str = Field(default=DEFAULT_SUBJECT, description="What a rollout was asked to paint, unless it says.")
    run_dir: Path = Field(
        default=Path("runs/scoring"),
        description="The run's directory, where a term that keeps state keeps it (the judge's curriculum).",
    )
