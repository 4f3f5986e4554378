"""Group-relative judging: a group's paintings judged against each other, each scored by its win rate in the group.

A pointwise judge score (a painting against k pool references) is nearly the same for every painting of a group
once the policy settles, and GRPO divides the tiny differences by their tiny spread: noise becomes advantage. Pref-GRPO
(arXiv 2508.20751) judges the group's own samples against each other instead, so the term is a rank within the group
and spreads over 0..1 whenever the judge prefers anything.

Pairings (both presentation orders every time, ties and position-biased splits score 1/2, unresolved left out):

| pairing | pairs per group of G | judge calls per group |
|---|---|---|
| `round-robin` | G(G-1)/2 | G(G-1) |
| `ring` (each painting against the next `ring_neighbours` in a seeded ring) | G x m | 2 G m |
| anchor (optional, either pairing) | + G (each painting against one drawn reference) | + 2 G |

against 2 G k calls for the reference-pool mode (k references each). A group with a single admitted painting has no
one to compare with: it is compared with the anchor if there is one, else its win rate is 1/2 (no information). A
judge call that fails after its retries leaves its comparison unresolved; if that leaves a painting with no resolved
comparison at all, the group cannot be ranked fairly and the whole call raises ServiceUnavailable (dead letters,
reward None), as the reference-pool mode does for one painting.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Sequence
from typing import Any

from ground.records import Comparison, JudgeVerdict
from rewards.errors import ServiceUnavailable
from rewards.judging.curriculum import Compare
from rewards.judging.judge_protocol import draw_references


def pairings(count: int, mode: str, neighbours: int, seed: int) -> list[tuple[int, int]]:
    """Index pairs (i < j or ring order) to compare within a group of `count` paintings."""
    if mode == "round-robin" or count <= neighbours + 1:
        return list(itertools.combinations(range(count), 2))
    order = list(range(count))
    random.Random(seed).shuffle(order)
    return [(order[i], order[(i + step) % count]) for i in range(count) for step in range(1, neighbours + 1)]


async def both_orders(compare: Compare, a: Any, b: Any, name: str, failures: list[ServiceUnavailable]) -> Comparison:
    """a against b, shown first and then second: a's score 1, 1/2 or 0; None when either order got no verdict."""
    replies = await asyncio.gather(compare(a, b), compare(b, a), return_exceptions=True)
    for reply in replies:
        if isinstance(reply, ServiceUnavailable):
            failures.append(reply)
        elif isinstance(reply, BaseException):
            raise reply
    first, second = (reply if isinstance(reply, str) else None for reply in replies)
    if first is None or second is None:
        return Comparison(reference=name, first=first, second=second)
    wins = (first == "A") + (second == "B")
    return Comparison(reference=name, first=first, second=second, score=wins / 2, position_biased=wins == 1)


def _flip(comparison: Comparison, name: str) -> Comparison:
    """The same two verdicts from the other painting's side."""
    score = None if comparison.score is None else 1.0 - comparison.score
    return comparison.model_copy(update={"reference": name, "score": score})


async def group_verdicts(
    compare: Compare,
    paintings: Sequence[Any],
    backend: str,
    mode: str = "round-robin",
    neighbours: int = 2,
    seed: int = 0,
    anchor: tuple[str, Any] | None = None,
) -> list[JudgeVerdict]:
    """One verdict per painting (each prepared by the judge's backend): its win rate over its comparisons with
    groupmates (and the anchor)."""
    pairs = pairings(len(paintings), mode, neighbours, seed)
    failures: list[ServiceUnavailable] = []
    results = await asyncio.gather(
        *(both_orders(compare, paintings[i], paintings[j], f"groupmate-{j}", failures) for i, j in pairs)
    )
    comparisons: list[list[Comparison]] = [[] for _ in paintings]
    for (i, j), comparison in zip(pairs, results, strict=True):
        comparisons[i].append(comparison)
        comparisons[j].append(_flip(comparison, f"groupmate-{i}"))
    if anchor is not None:
        name, reference = anchor
        anchored = await asyncio.gather(
            *(both_orders(compare, painting, reference, name, failures) for painting in paintings)
        )
        for found, comparison in zip(comparisons, anchored, strict=True):
            found.append(comparison)
    verdicts = []
    for found in comparisons:
        resolved = [c for c in found if c.score is not None]
        if found and not resolved and failures:
            raise ServiceUnavailable("judge", failures[0].cause, max(f.attempts for f in failures))
        verdicts.append(
            JudgeVerdict(
                score=sum(c.score for c in resolved if c.score is not None) / len(resolved) if resolved else 0.5,
                comparisons=found,
                position_bias_rate=sum(c.position_biased for c in resolved) / len(resolved) if resolved else None,
                backend=backend,
            )
        )
    return verdicts


class GroupJudge:
    """A judge backend asked about each group's own paintings: the judge term's client in `group` mode.

    The term is batched in this mode, so the engine hands over every admitted painting of a scored batch at once
    (one GRPO group under the Prefect fan-out, the step's groups in the trainer's own path); paintings are grouped
    by their group seed. A group that cannot be ranked fails the call it is in (see the module docstring).
    """

    batched = True

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.settings = inner.settings
        self.pool = inner.pool
        self.backend_id = inner.backend_id  # the digest covers the mode, pairing and anchor

    def prepare_rollout(self, png: bytes) -> Any:
        return self.inner.prepare_rollout(png)

    async def compare(self, image_a: Any, image_b: Any) -> Any:
        return await self.inner.compare(image_a, image_b)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def judge_groups(self, paintings: Sequence[tuple[bytes, int]]) -> list[JudgeVerdict]:
        """(png, group seed) in, one verdict each out, in the same order."""
        groups: dict[int, list[int]] = {}
        for index, (_, seed) in enumerate(paintings):
            groups.setdefault(seed, []).append(index)
        verdicts: list[JudgeVerdict | None] = [None] * len(paintings)

        async def rank(seed: int, members: list[int]) -> None:
            anchor = None
            if self.settings.anchor:
                (reference,) = draw_references(self.pool, 1, seed, self.settings.mix)
                anchor = (reference.name, self.inner.prepare_reference(reference))
            prepared = [self.prepare_rollout(paintings[index][0]) for index in members]
            s = self.settings
            found = await group_verdicts(
                self.compare, prepared, self.backend_id, s.pairing, s.ring_neighbours, seed, anchor
            )
            for index, verdict in zip(members, found, strict=True):
                verdicts[index] = verdict

        await asyncio.gather(*(rank(seed, members) for seed, members in groups.items()))
        return [verdict for verdict in verdicts if verdict is not None]
