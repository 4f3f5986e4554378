"""A reference curriculum: the references a group faces are drawn by difficulty, following the run's win rate.

With references drawn at random, a weak policy loses nearly every comparison and a strong one wins nearly every
one, and in both cases the judge term barely separates the paintings of a group. The curriculum keeps the
comparisons winnable about half the time (`target_win_rate`): each reference has a *difficulty* (how rarely typical
paintings beat it, measured once per run against the rest of the pool), and each group's draw prefers references
near a *wanted difficulty* that rises while the run's recent judge win rate is above the target and falls while it
is below:

    wanted = clip(0.5 + gain * (recent win rate - target), 0, 1)        (0.5 before any history)

The draw is a seeded weighted sample without replacement (weight exp(-((difficulty - wanted) / spread)^2)), so a
group's references depend only on its group seed and the run's history, which a resume restores from the run's
curves: the same references again, and the content cache stays valid. What was wanted and drawn is recorded on
every verdict.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from statistics import fmean
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from rewards.judge_protocol import PoolReference, Winner


R = TypeVar("R", bound=PoolReference)
# Which of two prepared pictures wins (a backend's `compare`, over what its `prepare_*` made of each picture).
Compare = Callable[[Any, Any], Awaitable[Winner | None]]


class CurriculumSettings(BaseModel):
    """Off by default: the published presets draw at random; the `curriculum` preset turns it on."""

    enabled: bool = Field(default=False, description="Draw references by difficulty instead of at random.")
    target_win_rate: float = Field(
        default=0.5, gt=0, lt=1, description="Judge win rate the draw steers towards (1/2: as often won as lost)."
    )
    window_steps: int = Field(default=3, ge=1, description="Recent steps whose mean judge score is the win rate.")
    gain: float = Field(default=1.5, ge=0, description="How far the wanted difficulty moves per unit of win-rate gap.")
    spread: float = Field(default=0.2, gt=0, description="Width of the preference around the wanted difficulty.")
    challengers: int = Field(
        default=4, ge=1, description="Pool paintings each reference is compared with when its difficulty is measured."
    )


async def reference_difficulty(
    compare: Compare, prepared: Mapping[str, Any], challengers: int, seed: int = 0
) -> dict[str, float]:
    """Per reference (name -> prepared picture), 1 minus how often other pool paintings beat it, both orders, ties
    half: 0 easy, 1 hard. A reference with no resolved comparison gets 1/2."""
    rng = random.Random(seed)
    names = sorted(prepared)
    pairs = []
    for name in names:
        others = [other for other in names if other != name]
        pairs += [(other, name) for other in rng.sample(others, min(challengers, len(others)))]

    async def beaten(other: str, name: str) -> float | None:
        a, b = prepared[other], prepared[name]
        first, second = await asyncio.gather(compare(a, b), compare(b, a))
        return None if first is None or second is None else ((first == "A") + (second == "B")) / 2

    scores = await asyncio.gather(*(beaten(other, name) for other, name in pairs))
    by_reference: dict[str, list[float]] = {name: [] for name in names}
    for (_, name), score in zip(pairs, scores, strict=True):
        if score is not None:
            by_reference[name].append(score)
    return {name: 1.0 - fmean(found) if found else 0.5 for name, found in by_reference.items()}


def wanted_difficulty(recent_win_rate: float | None, settings: CurriculumSettings) -> float:
    if recent_win_rate is None:
        return 0.5
    return min(1.0, max(0.0, 0.5 + settings.gain * (recent_win_rate - settings.target_win_rate)))


def draw_by_difficulty(
    pool: Sequence[R], k: int, seed: int, difficulty: dict[str, float], wanted: float, spread: float
) -> list[R]:
    """k references, seeded, preferring those whose difficulty is near `wanted` (Efraimidis-Spirakis keys)."""
    rng = random.Random(seed)
    keyed = []
    for reference in sorted(pool, key=lambda r: r.name):
        weight = math.exp(-(((difficulty[reference.name] - wanted) / spread) ** 2))
        # u ** (1 / w), with a floor so a far reference is unlikely rather than impossible (and no division by 0).
        keyed.append((rng.random() ** (1.0 / max(weight, 1e-6)), reference))
    keyed.sort(key=lambda item: item[0], reverse=True)
    return [reference for _, reference in keyed[:k]]


def recent_win_rate(judge_means: Sequence[float | None], window: int) -> float | None:
    """The mean of the last `window` steps' judge scores that were measured; None before any."""
    measured = [value for value in judge_means if value is not None]
    return fmean(measured[-window:]) if measured else None
