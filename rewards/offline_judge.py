"""The offline judge: a deterministic pool-similarity STAND-IN for the VLM judge, named as such in every output.

It runs the same protocol as the real judge (the same seeded references, both presentation orders, the same
scoring) with a symmetric rule: of images A and B, the winner has the higher merit, which is the offline aesthetic
score less a penalty for distance from the centroid of the pool's `love` tier (the whole pool when it has no `love`
tier). So the pool sets the taste, and a reference does not win just by being in the pool. Only an exact tie goes
to "A", as a position-biased judge's would, so ties score 1/2 and count as position bias.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rewards.judge import JudgeSettings, PoolReference, Winner, draw_references, judge_digest, pairwise_verdict
from rewards.offline_aesthetic import ImageFeatures, image_features, stats_score
from watercolour.records import JudgeVerdict


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


def feature_vector(features: ImageFeatures) -> np.ndarray:
    """Scalars and both histograms in one vector; every part lies in 0..1, histograms weigh as much as a scalar."""
    scalars = [features.coverage, features.tonal_range, features.softness, features.palette, features.centring]
    return np.concatenate([scalars, features.hues / 2.0, features.tones / 2.0])


def profile(png: bytes) -> Profile:
    features = image_features(png)
    return Profile(stats_score(features), feature_vector(features))


class PoolSimilarityJudge:
    """Deterministic and offline. Reference features are computed once per judge instance, on first draw."""

    def __init__(self, settings: JudgeSettings, pool: Sequence[PoolReference]) -> None:
        self.settings = settings
        self.pool = list(pool)
        self.backend_id = f"offline-pool-similarity-v1:{judge_digest(settings, pool)}"
        self._profiles: dict[str, Profile] = {}
        self._pictures: dict[str, Profile] = {}
        love = [r for r in self.pool if r.tier == "love"] or self.pool
        self._target = np.mean([self._reference(r).vector for r in love], axis=0)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_profiles": {}, "_pictures": {}}

    def _reference(self, reference: PoolReference) -> Profile:
        if reference.name not in self._profiles:
            self._profiles[reference.name] = profile(reference.png)
        return self._profiles[reference.name]

    def merit(self, picture: Profile) -> float:
        return picture.quality - SIMILARITY_WEIGHT * float(np.abs(picture.vector - self._target).sum())

    async def judge(self, png: bytes, group_seed: int) -> JudgeVerdict:
        drawn = draw_references(self.pool, self.settings.references, group_seed, self.settings.mix)
        references = [(r.name, self._reference(r)) for r in drawn]
        return await pairwise_verdict(self._compare, profile(png), references, self.backend_id)

    async def compare(self, png_a: bytes, png_b: bytes) -> Winner | None:
        return await self._compare(self._picture(png_a), self._picture(png_b))

    def _picture(self, png: bytes) -> Profile:
        # The audit asks about the same few dozen pictures hundreds of times; decoding is the whole cost.
        key = hashlib.sha256(png).hexdigest()
        if key not in self._pictures:
            self._pictures[key] = profile(png)
        return self._pictures[key]

    async def _compare(self, image_a: Profile, image_b: Profile) -> Winner | None:
        return "B" if self.merit(image_b) > self.merit(image_a) + TIE else "A"

    async def aclose(self) -> None:
        return None
