"""The pairwise judge's protocol: a painting against k references from the hand-rated pool, in both orders.

A comparison scores 1 (won both orders), 1/2 (split: a tie or position bias) or 0 (lost both); a comparison where
either order got no verdict is unresolved and left out. The judge score is the mean over resolved comparisons. When
nothing resolved the judge raises ServiceUnavailable, so the composite reward is None rather than a zero.

This module holds what both backends share: the settings, the seeded reference draw, the both-orders verdict and
the one `judge()` flow (`PairwiseJudge`). The backends (`rewards.judging.openai_judge`, a VLM behind any
OpenAI-compatible endpoint, and `rewards.judging.offline_judge`, the pool-similarity stand-in) only say how a picture
is prepared and which of two wins; `rewards.judging.judge` picks one. Nothing here imports a backend.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Literal, Protocol, TypeVar

from ground.records import Comparison, JudgeVerdict
from rewards.errors import ServiceUnavailable
from rewards.judging.settings import JudgeSettings


Winner = Literal["A", "B"]
# A comparison's answer: the winner, or the winner and the judge's reason (a backend that explains itself).
Answer = Winner | None | tuple[Winner | None, str | None]
T = TypeVar("T")


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
    """What the judge needs of a `ground.reference_pool.Reference`."""

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
