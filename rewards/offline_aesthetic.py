"""The offline aesthetic scorer: a deterministic image-statistics STAND-IN for HPSv3, named as such in every output.

It rewards what separates a watercolour from a blank page or a flat blob: paint coverage in a band that leaves
paper showing, many tones of wash rather than one, soft rather than hard edges, a few hues rather than one or a
rainbow, and paint gathered towards the middle. The same features feed the offline judge.

Given the subject a painting was asked for, it also reads the subject (`rewards.subject_match`): `SUBJECT_WEIGHT` (0.7) of the
score is then how far the washes show the colours the subject names (`with_subject`). HPSv3 scores an
image against a text prompt and a VLM judge's references are flowers with colours; a stand-in blind to the
subject taught a run that a "peach hibiscus" may come out blue (docs/learning.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ground.records import AestheticScore
from rewards.pixels import Pixels, analyse
from rewards.subject_match import SubjectMatch, match_pixels


HUE_BINS = 12
TONE_BINS = 16
# Luminance steps below this (0..255 levels per analysis pixel) read as a soft, bled edge; above it, a hard one.
SOFT_STEP = 24.0
EDGE_STEP = 2.0


@dataclass(frozen=True)
class ImageFeatures:
    """What the offline backends see of a picture. Scalars lie in 0..1; histograms sum to 1 (or are all zero)."""

    coverage: float
    tonal_range: float
    softness: float
    palette: float
    centring: float
    hues: np.ndarray
    tones: np.ndarray


def _ramp(x: float, lo: float, hi: float) -> float:
    return float(np.clip((x - lo) / (hi - lo), 0.0, 1.0))


def _entropy(histogram: np.ndarray) -> float:
    p = histogram[histogram > 0]
    return float(-(p * np.log(p)).sum() / np.log(len(histogram)))


def _normalised(histogram: np.ndarray) -> np.ndarray:
    total = histogram.sum()
    return histogram / total if total > 0 else np.zeros_like(histogram, dtype=np.float64)


def image_features(png: bytes) -> ImageFeatures:
    """The measured features of a picture (see `analyse`)."""
    return features_of(analyse(png))


def features_of(pixels: Pixels) -> ImageFeatures:
    rgb, paint, hue, saturation = pixels.rgb, pixels.paint, pixels.hue, pixels.saturation
    coverage = float(paint.mean())
    luminance = rgb @ np.array([0.299, 0.587, 0.114])

    tones = _normalised(np.histogram(luminance[paint], bins=TONE_BINS, range=(0, 256))[0].astype(np.float64))

    steps = np.concatenate([np.abs(np.diff(luminance, axis=0)).ravel(), np.abs(np.diff(luminance, axis=1)).ravel()])
    edges = steps[steps > EDGE_STEP]
    softness = float(edges[edges < SOFT_STEP].sum() / edges.sum()) if edges.size else 0.0

    coloured = paint & (saturation > 0.15)
    hues = _normalised(
        np.histogram(hue[coloured], bins=HUE_BINS, range=(0, 1), weights=saturation[coloured])[0].astype(np.float64)
    )
    distinct = int((hues > 0.08).sum())
    palette = {0: 0.3, 1: 0.6, 2: 1.0, 3: 1.0, 4: 1.0, 5: 0.7}.get(distinct, 0.4)

    if paint.any():
        ys, xs = np.nonzero(paint)
        h, w = paint.shape
        offset = np.hypot(ys.mean() / h - 0.5, xs.mean() / w - 0.5) / np.hypot(0.5, 0.5)
        centring = float(1.0 - min(1.0, 2.0 * offset))
    else:
        centring = 0.0
    return ImageFeatures(coverage, _entropy(tones) if paint.any() else 0.0, softness, palette, centring, hues, tones)


def stats_score(features: ImageFeatures) -> float:
    """0..1. Coverage gates the rest: a blank page scores 0 however 'soft' its nothing is."""
    # Pool paintings cover 12-25% of the canvas; above ~55% the paper stops showing through.
    coverage = min(_ramp(features.coverage, 0.03, 0.12), 1.0 - _ramp(features.coverage, 0.55, 0.95))
    quality = 0.3 * features.tonal_range + 0.3 * features.softness + 0.2 * features.palette + 0.2 * features.centring
    return float(coverage * quality)


# How much of the offline score the subject's colours decide. The statistics alone rank a pale peach flower under
# the same flower in deep blue (a paler wash is less paint against the paper: 0.05 against 0.14, measured), so a
# factor on them could not make the subject count; the match is added beside them instead.
SUBJECT_WEIGHT = 0.7
# The match counts in full once this much of the canvas is paint: a speck in the right colour is not a flower.
SUBJECT_COVERAGE = (0.005, 0.04)


def with_subject(stats: float, coverage: float, match: SubjectMatch | None) -> float:
    """The offline score: the statistics score alone without a subject; with one, (1 - SUBJECT_WEIGHT) of it plus
    SUBJECT_WEIGHT of the subject match (scaled down while the paint is a speck)."""
    if match is None:
        return stats
    present = _ramp(coverage, *SUBJECT_COVERAGE)
    return (1.0 - SUBJECT_WEIGHT) * stats + SUBJECT_WEIGHT * match.match * present


def offline_score(pixels: Pixels, subject: str | None) -> tuple[float, float, SubjectMatch | None]:
    """(score, statistics score, subject match) of one analysed picture."""
    features = features_of(pixels)
    stats = stats_score(features)
    match = match_pixels(pixels, subject) if subject else None
    return with_subject(stats, features.coverage, match), stats, match


class ImageStatsScorer:
    """Deterministic, offline, instant. A stand-in for HPSv3 so the pipeline runs without a GPU or the hub.

    `score(pngs, subjects)` reads each painting's subject when given one; its raw value is the statistics score.
    """

    backend_id = "offline-image-stats-v1"

    async def score(self, pngs: list[bytes], subjects: list[str | None] | None = None) -> list[AestheticScore]:
        return [
            self.score_one(png, subject) for png, subject in zip(pngs, subjects or [None] * len(pngs), strict=True)
        ]

    def score_one(self, png: bytes, subject: str | None = None) -> AestheticScore:
        value, stats, match = offline_score(analyse(png), subject)
        return AestheticScore(
            score=value, raw=stats, backend=self.backend_id, subject_match=match.match if match else None
        )

    async def aclose(self) -> None:
        return None
