"""The offline judge: a deterministic pool-similarity STAND-IN for the VLM judge, named as such in every output.

It runs the same protocol as the real judge (the same seeded references, both presentation orders, the same
scoring) with a symmetric rule: of images A and B, the winner has the higher merit, which is the offline aesthetic
score less a penalty for distance from the centroid of the pool's `love` tier (the whole pool when it has no `love`
tier). So the pool sets the taste, and a reference does not win just by being in the pool. Only an exact tie goes
to "A", as a position-biased judge's would, so ties score 1/2 and count as position bias.

Given the subject of the painting being judged, both pictures of every comparison are read against it: the
offline score in the merit takes in the subject match (`offline_aesthetic.with_subject`), so a painting in the
subject's colours beats a reference of another flower that it would otherwise lose to, as a VLM asked about a
"peach hibiscus" would prefer a peach one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from rewards.judge_protocol import JudgeSettings, PairwiseJudge, PoolReference, Winner, judge_digest
from rewards.offline_aesthetic import ImageFeatures, features_of, stats_score, with_subject
from rewards.pixels import Pixels, analyse
from rewards.subject_match import match_pixels


# A whole unit of L1 distance from the love tier's statistics costs a quarter of the 0..1 stats score: the pool's
# style decides between paintings of similar quality, but cannot lift a blank page or a flat blob over a wash.
SIMILARITY_WEIGHT = 0.25
# Closer than this counts as equal merit: float noise must not decide a verdict.
TIE = 1e-9


@dataclass(frozen=True)
class Profile:
    """One picture as the offline judge sees it."""

    quality: float
    vector: np.ndarray
    pixels: Pixels
    coverage: float


def feature_vector(features: ImageFeatures) -> np.ndarray:
    """Scalars and both histograms in one vector; every part lies in 0..1, histograms weigh as much as a scalar."""
    scalars = [features.coverage, features.tonal_range, features.softness, features.palette, features.centring]
    return np.concatenate([scalars, features.hues / 2.0, features.tones / 2.0])


def profile(png: bytes) -> Profile:
    pixels = analyse(png)
    features = features_of(pixels)
    return Profile(stats_score(features), feature_vector(features), pixels, features.coverage)


class PoolSimilarityJudge(PairwiseJudge[Profile]):
    """Deterministic and offline. Reference features are computed once per judge instance, on first draw."""

    def __init__(self, settings: JudgeSettings, pool: Sequence[PoolReference]) -> None:
        self.settings = settings
        self.pool = list(pool)
        self.backend_id = f"offline-pool-similarity-v1:{judge_digest(settings, pool)}"
        self._profiles: dict[str, Profile] = {}
        love = [r for r in self.pool if r.tier == "love"] or self.pool
        self._target = np.mean([self.prepare_reference(r).vector for r in love], axis=0)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_profiles": {}}

    def prepare_reference(self, reference: PoolReference) -> Profile:
        if reference.name not in self._profiles:
            self._profiles[reference.name] = profile(reference.png)
        return self._profiles[reference.name]

    def merit(self, picture: Profile, subject: str | None = None) -> float:
        quality = picture.quality
        if subject:
            quality = with_subject(quality, picture.coverage, match_pixels(picture.pixels, subject))
        return quality - SIMILARITY_WEIGHT * float(np.abs(picture.vector - self._target).sum())

    def prepare_rollout(self, png: bytes) -> Profile:
        return profile(png)

    async def compare(self, image_a: Profile, image_b: Profile, subject: str | None = None) -> Winner | None:
        return "B" if self.merit(image_b, subject) > self.merit(image_a, subject) + TIE else "A"

    def comparer(self, subject: str | None) -> Callable[[Profile, Profile], Awaitable[Winner | None]]:
        return partial(self.compare, subject=subject)

    async def aclose(self) -> None:
        return None
