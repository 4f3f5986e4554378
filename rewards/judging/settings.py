"""The judge term's settings: which backend, how many references and how drawn, the group mode, the curriculum.

Its own module because every judge backend reads it and the term (`rewards.judging.judge`) is built from the
backends; the run configuration holds it under `judge` (`rewards.term.RewardTerm.settings_of`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


DEFAULT_CRITERIA = (
    "Reward what only watercolour does well: pigment that bleeds softly into wet paper, translucent washes layered "
    "so the lower ones glow through, edges that vary from crisp to dissolved, white paper left to breathe, and a "
    "composition that looks chosen. Penalise muddy or opaque colour, flat single-tone fills, mechanical repeated "
    "strokes, uniformly hard outlines and canvases that are nearly empty."
)


class CurriculumSettings(BaseModel):
    """The reference curriculum (`rewards.judging.curriculum`); off by default, on in the `curriculum` preset."""

    model_config = ConfigDict(extra="forbid")

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

    model_config = ConfigDict(extra="forbid")

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
