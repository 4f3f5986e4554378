"""The pairwise judge's protocol: a painting against k references from the hand-rated pool, in both orders.

A comparison scores 1 (won both orders), 1/2 (split: a tie or position bias) or 0 (lost both); a comparison where
either order got no verdict is unresolved and left out. The judge score is the mean over resolved comparisons. When
nothing resolved the judge raises ServiceUnavailable, so the composite reward is None rather than a zero.

This module holds what both backends share: the settings, the seeded reference draw, the both-orders verdict and
the one `judge()` flow (`PairwiseJudge`). The backends (`rewards.openai_judge`, a VLM behind any
OpenAI-compatible endpoint, and `rewards.offline_judge`, the pool-similarity stand-in) only say how a picture
is prepared and which of two wins; `rewards.judge` picks one. Nothing here imports a backend.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

from rewards.errors import ServiceUnavailable
from watercolour.records import Comparison, JudgeVerdict


Winner = Literal["A", "B"]
# A comparison's answer: the winner, or the winner and the judge's reason (a backend that explains itself).
Answer = Winner | None | tuple[Winner | None, str | None]
T = TypeVar("T")

DEFAULT_CRITERIA = (
    "Reward what only watercolour does well: pigment that bleeds softly into wet paper, translucent washes layered "
    "so the lower ones glow through, edges that vary from crisp to dissolved, white paper left to breathe, and a "
    "composition that looks chosen. Penalise muddy or opaque colour, flat single-tone fills, mechanical repeated "
    "strokes, uniformly hard outlines and canvases that are nearly empty."
)


class CurriculumSettings(BaseModel):
    """The reference curriculum (`rewards.curriculum`); off by default, on in the `curriculum` preset."""

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
        "each other, the term being each one's win rate in its group (rewards.group_judging).",
    )
    pairing: Literal["round-robin", "ring"] = Field(
        default="round-robin", description="Group mode: every pair (G(G-1) calls) or a seeded ring (2 G m calls)."
    )
    ring_neighbours: int = Field(default=2, ge=1, description="Group mode, ring pairing: neighbours m per painting.")
    anchor: bool = Field(default=False, description="Group mode: also compare each painting with one drawn reference.")
    curriculum: CurriculumSettings = Field(
        default_factory=CurriculumSettings,
        description="References mode: draw them by difficulty (rewards.curriculum).",
    )


class Judge(Protocol):
    """Scores one painting against the references its group seed draws. Raises ServiceUnavailable if none resolved."""

    backend_id: str

    async def judge(self, png: bytes, group_seed: int, subject: str | None = None) -> JudgeVerdict: ...

    def prepare_rollout(self, png: bytes) -> Any:
        """The picture as the backend compares it (a data URL, a feature profile): prepared once, compared often."""
        ...

    async def compare(self, image_a: Any, image_b: Any) -> Winner | None:
        """One question: the better of two prepared pictures, A shown first (None when the reply named neither)."""
        ...

    async def aclose(self) -> None: ...


class PoolReference(Protocol):
    """What the judge needs of a `watercolour.reference_pool.Reference`."""

    @property
    def name(self) -> str: ...
    @property
    def tier(self) -> str: ...
    @property
    def png(self) -> bytes: ...


R = TypeVar("R", bound=PoolReference)


def draw_references(pool: Sequence[R], k: int, seed: int, mix: dict[str, float]) -> list[R]:
    """k references, seeded by the group so every rollout of a group faces the same ones.

    Counts per tier are floor(k x share) plus largest remainders, capped by the tier's size; the mix is renormalised
    over tiers present. Half `okay` keeps early comparisons winnable; half `love` keeps the ceiling honest.
    """
    tiers: dict[str, list[R]] = {}
    for reference in sorted(pool, key=lambda r: r.name):
        tiers.setdefault(reference.tier, []).append(reference)
    shares = {tier: share for tier, share in mix.items() if share > 0 and tier in tiers}
    if not shares:
        raise ValueError(f"no tier of the judge mix {mix} is in the reference pool (it has {sorted(tiers)})")
    total = sum(shares.values())
    wanted = min(k, sum(len(tiers[tier]) for tier in shares))
    exact = {tier: wanted * share / total for tier, share in shares.items()}
    counts = {tier: min(math.floor(exact[tier]), len(tiers[tier])) for tier in shares}
    by_remainder = sorted(shares, key=lambda tier: exact[tier] - math.floor(exact[tier]), reverse=True)
    while sum(counts.values()) < wanted:
        for tier in by_remainder:
            if sum(counts.values()) < wanted and counts[tier] < len(tiers[tier]):
                counts[tier] += 1
    rng = random.Random(seed)
    return [reference for tier in shares for reference in rng.sample(tiers[tier], counts[tier])]


def judge_digest(settings: JudgeSettings, pool: Sequence[PoolReference]) -> str:
    """Eight hex digits over everything that changes a verdict but the model id: criteria, draw and pool content."""
    described = [settings.criteria, settings.references, settings.mix]
    if settings.mode != "references":  # only what departs from the default protocol joins, so old ids stay valid
        described.append([settings.mode, settings.pairing, settings.ring_neighbours, settings.anchor])
    if settings.curriculum.enabled:
        described.append(settings.curriculum.model_dump())
    digest = hashlib.sha256(json.dumps(described).encode())
    for reference in sorted(pool, key=lambda r: r.name):
        digest.update(reference.name.encode() + reference.tier.encode() + hashlib.sha256(reference.png).digest())
    return digest.hexdigest()[:8]


def answer_parts(answer: Answer) -> tuple[Winner | None, str | None]:
    """The winner and the reason (None when the backend gave none) of one comparison's answer."""
    return answer if isinstance(answer, tuple) else (answer, None)


async def pairwise_verdict(
    compare: Callable[[T, T], Awaitable[Answer]],
    rollout: T,
    references: list[tuple[str, T]],
    backend: str,
) -> JudgeVerdict:
    """Run the both-orders protocol. `compare(a, b)` names the better of image A and image B, None when unparseable,
    (optionally with its reason: the reason of the order that shows the rollout as A is kept), and raises
    ServiceUnavailable when the service could not answer."""
    failures: list[ServiceUnavailable] = []

    async def verdict(name: str, reference: T) -> Comparison:
        replies = await asyncio.gather(
            compare(rollout, reference), compare(reference, rollout), return_exceptions=True
        )
        winners: list[Winner | None] = []
        reasons: list[str | None] = []
        for reply in replies:
            if isinstance(reply, ServiceUnavailable):
                failures.append(reply)
                winners.append(None)
                reasons.append(None)
            elif isinstance(reply, BaseException):
                raise reply
            else:
                winner, reason = answer_parts(reply)
                winners.append(winner)
                reasons.append(reason)
        first, second = winners
        reason = reasons[0]
        if first is None or second is None:
            return Comparison(reference=name, first=first, second=second, reason=reason)
        wins = (first == "A") + (second == "B")
        return Comparison(
            reference=name, first=first, second=second, score=wins / 2, position_biased=wins == 1, reason=reason
        )

    comparisons = await asyncio.gather(*(verdict(name, reference) for name, reference in references))
    resolved = [c for c in comparisons if c.score is not None]
    if not resolved:
        if failures:
            raise ServiceUnavailable("judge", failures[0].cause, max(f.attempts for f in failures))
        raise ServiceUnavailable("judge", "malformed: no reply named a winner", 1)
    return JudgeVerdict(
        score=sum(c.score for c in resolved if c.score is not None) / len(resolved),
        comparisons=list(comparisons),
        position_bias_rate=sum(c.position_biased for c in resolved) / len(resolved),
        backend=backend,
    )


class PairwiseJudge(Generic[T]):
    """The one `judge()` flow: draw the group's references, prepare them and the painting, run the protocol.

    A backend sets `settings`, `pool` and `backend_id` and says how a picture is prepared (a data URL, a feature
    profile) and which of two prepared pictures wins and why (`explain`; `compare` keeps only the winner)."""

    settings: JudgeSettings
    pool: list[PoolReference]
    backend_id: str

    def prepare_reference(self, reference: PoolReference) -> T:
        raise NotImplementedError

    def prepare_rollout(self, png: bytes) -> T:
        raise NotImplementedError

    async def compare(self, image_a: T, image_b: T) -> Winner | None:
        winner, _ = await self.explain(image_a, image_b)
        return winner

    async def explain(self, image_a: T, image_b: T) -> tuple[Winner | None, str | None]:
        """The winner of one question and the judge's reason for it (None when the backend gave none)."""
        raise NotImplementedError

    def comparer(self, subject: str | None) -> Callable[[T, T], Awaitable[Answer]]:
        """How two prepared pictures are compared for a painting of `subject`: `explain`, unless the backend reads
        the subject (the offline stand-in does; the VLM's question is the criteria, which do not name it)."""
        return self.explain

    async def judge(self, png: bytes, group_seed: int, subject: str | None = None) -> JudgeVerdict:
        drawn = draw_references(self.pool, self.settings.references, group_seed, self.settings.mix)
        references = [(reference.name, self.prepare_reference(reference)) for reference in drawn]
        return await pairwise_verdict(self.comparer(subject), self.prepare_rollout(png), references, self.backend_id)
