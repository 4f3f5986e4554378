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

Its reason comes from the same terms its merit adds up (`merit_terms`): the one or two features on which the winner
gained the most merit over the loser, in words (the subject match among them when it decided), and it always
begins "offline judge:".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from rewards.judging.judge_protocol import Answer, PairwiseJudge, PoolReference, Winner, judge_digest
from rewards.judging.settings import JudgeSettings
from rewards.offline_aesthetic import ImageFeatures, features_of, stats_score, with_subject
from rewards.pixels import Pixels, analyse
from rewards.subject_match import match_pixels


# A whole unit of L1 distance from the love tier's statistics costs a quarter of the 0..1 stats score: the pool's
# style decides between paintings of similar quality, but cannot lift a blank page or a flat blob over a wash.
SIMILARITY_WEIGHT = 0.25
# A subject match this much higher is named in the reason.
SUBJECT_GAP = 0.1
# Closer than this counts as equal merit: float noise must not decide a verdict.
TIE = 1e-9


# What a feature's merit gain means, by whether the winner has more of it than the loser or less; the histograms'
# terms are closeness to the loved paintings', one phrase either way.
FEATURE_WORDS: dict[str, tuple[str, str]] = {
    "coverage": ("more paint on the sheet", "less paint on the sheet"),
    "tonal_range": ("a wider tonal range", "a narrower tonal range"),
    "softness": ("softer edges", "harder edges"),
    "palette": ("a richer palette", "a plainer palette"),
    "centring": ("a better-centred flower", "a less centred flower"),
    "hues": ("hues closer to the loved paintings'", "hues closer to the loved paintings'"),
    "tones": ("tones closer to the loved paintings'", "tones closer to the loved paintings'"),
}
SCALARS = ("coverage", "tonal_range", "softness", "palette", "centring")
# The quality weights of `stats_score`, which coverage's ramp multiplies.
QUALITY_WEIGHTS = {"tonal_range": 0.3, "softness": 0.3, "palette": 0.2, "centring": 0.2}
REASON_FEATURES = 2


@dataclass(frozen=True)
class Profile:
    """One picture as the offline judge sees it."""

    quality: float
    vector: np.ndarray
    pixels: Pixels
    coverage: float
    features: ImageFeatures | None = None


def feature_vector(features: ImageFeatures) -> np.ndarray:
    """Scalars and both histograms in one vector; every part lies in 0..1, histograms weigh as much as a scalar."""
    scalars = [features.coverage, features.tonal_range, features.softness, features.palette, features.centring]
    return np.concatenate([scalars, features.hues / 2.0, features.tones / 2.0])


def profile(png: bytes) -> Profile:
    pixels = analyse(png)
    features = features_of(pixels)
    return Profile(stats_score(features), feature_vector(features), pixels, features.coverage, features)


def merit_terms(picture: Profile, target: np.ndarray) -> dict[str, float]:
    """A picture's merit by feature: its share of the quality (coverage's is the ramp that gates the rest) less its
    distance penalty. They do not add up to the merit (quality is a product), but each says what a feature gives."""
    assert picture.features is not None, "a profile built by `profile` carries its features"
    features, gap = picture.features, np.abs(picture.vector - target)
    bins = len(features.hues)
    terms = {name: -SIMILARITY_WEIGHT * float(gap[index]) for index, name in enumerate(SCALARS)}
    unscaled = sum(weight * getattr(features, name) for name, weight in QUALITY_WEIGHTS.items())
    coverage_factor = picture.quality / unscaled if unscaled > 0 else 0.0
    terms["coverage"] += coverage_factor
    for name, weight in QUALITY_WEIGHTS.items():
        terms[name] += weight * coverage_factor * getattr(features, name)
    terms["hues"] = -SIMILARITY_WEIGHT * float(gap[len(SCALARS) : len(SCALARS) + bins].sum())
    terms["tones"] = -SIMILARITY_WEIGHT * float(gap[len(SCALARS) + bins :].sum())
    return terms


def reason(winner: Winner, image_a: Profile, image_b: Profile, target: np.ndarray) -> str:
    """Why the offline judge preferred `winner`: the features where it gained the most merit over the other."""
    won, lost = (image_a, image_b) if winner == "A" else (image_b, image_a)
    won_terms, lost_terms = merit_terms(won, target), merit_terms(lost, target)
    gains = {
        name: won_terms[name] - lost_terms[name] for name in won_terms if won_terms[name] - lost_terms[name] > TIE
    }
    if not gains:
        return "offline judge: the two are of equal merit, so the first shown (A) wins"
    assert won.features is not None and lost.features is not None
    words = []
    for name in sorted(gains, key=lambda feature: gains[feature], reverse=True)[:REASON_FEATURES]:
        more, less = FEATURE_WORDS[name]
        has_more = name not in SCALARS or getattr(won.features, name) >= getattr(lost.features, name)
        words.append(more if has_more else less)
    return f"offline judge: {winner} has {' and '.join(words)}"


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

    def winner(self, image_a: Profile, image_b: Profile, subject: str | None = None) -> Winner:
        return "B" if self.merit(image_b, subject) > self.merit(image_a, subject) + TIE else "A"

    def comparer(self, subject: str | None) -> Callable[[Profile, Profile], Awaitable[Answer]]:
        return partial(self.explain, subject=subject)

    async def compare(self, image_a: Profile, image_b: Profile, subject: str | None = None) -> Winner | None:
        return self.winner(image_a, image_b, subject)

    async def explain(
        self, image_a: Profile, image_b: Profile, subject: str | None = None
    ) -> tuple[Winner | None, str | None]:
        winner = self.winner(image_a, image_b, subject)
        why = reason(winner, image_a, image_b, self._target)
        if subject:
            won, lost = (image_a, image_b) if winner == "A" else (image_b, image_a)
            if match_pixels(won.pixels, subject).match > match_pixels(lost.pixels, subject).match + SUBJECT_GAP:
                why = f"offline judge: {winner} is closer to the colours of {subject!r}; " + why.removeprefix(
                    "offline judge: "
                )
        return winner, why

    async def aclose(self) -> None:
        return None
