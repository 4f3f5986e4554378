"""The offline aesthetic scorer: a deterministic image-statistics STAND-IN for HPSv3, named as such in every output.

It knows nothing of flowers. It rewards what separates a watercolour from a blank page or a flat blob: paint coverage
in a band that leaves paper showing, many tones of wash rather than one, soft rather than hard edges, a few hues
rather than one or a rainbow, and paint gathered towards the middle. The same features feed the offline judge.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
from PIL import Image

from renderers.coverage import PAINT_THRESHOLD, paper_colour
from watercolour.records import AestheticScore


# Small enough to keep a score under a few milliseconds; large enough that a hard edge stays one pixel wide.
ANALYSIS_SIZE = 160
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
    """Decode, composite over white, shrink with a box filter, and measure."""
    image = Image.open(io.BytesIO(png)).convert("RGBA")
    canvas = Image.new("RGBA", image.size, (255, 255, 255, 255))
    canvas.alpha_composite(image)
    canvas.thumbnail((ANALYSIS_SIZE, ANALYSIS_SIZE), Image.Resampling.BOX)
    rgb = np.asarray(canvas.convert("RGB"), dtype=np.float64)

    paint = np.abs(rgb - paper_colour(rgb.astype(np.uint8))).max(axis=-1) > PAINT_THRESHOLD
    coverage = float(paint.mean())
    luminance = rgb @ np.array([0.299, 0.587, 0.114])

    tones = _normalised(np.histogram(luminance[paint], bins=TONE_BINS, range=(0, 256))[0].astype(np.float64))

    steps = np.concatenate([np.abs(np.diff(luminance, axis=0)).ravel(), np.abs(np.diff(luminance, axis=1)).ravel()])
    edges = steps[steps > EDGE_STEP]
    softness = float(edges[edges < SOFT_STEP].sum() / edges.sum()) if edges.size else 0.0

    top, bottom = rgb.max(axis=-1), rgb.min(axis=-1)
    saturation = np.where(top > 0, (top - bottom) / np.maximum(top, 1e-9), 0.0)
    hue = _hue(rgb, top, bottom)
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


def _hue(rgb: np.ndarray, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """HSV hue in 0..1, vectorised (0 where the pixel is grey)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    span = np.maximum(top - bottom, 1e-9)
    hue = np.where(top == r, (g - b) / span, np.where(top == g, 2.0 + (b - r) / span, 4.0 + (r - g) / span))
    return np.where(top > bottom, (hue / 6.0) % 1.0, 0.0)


def stats_score(features: ImageFeatures) -> float:
    """0..1. Coverage gates the rest: a blank page scores 0 however 'soft' its nothing is."""
    # Pool paintings cover 12-25% of the canvas; above ~55% the paper stops showing through.
    coverage = min(_ramp(features.coverage, 0.03, 0.12), 1.0 - _ramp(features.coverage, 0.55, 0.95))
    quality = 0.3 * features.tonal_range + 0.3 * features.softness + 0.2 * features.palette + 0.2 * features.centring
    return float(coverage * quality)


class ImageStatsScorer:
    """Deterministic, offline, instant. A stand-in for HPSv3 so the pipeline runs without a GPU or the hub."""

    backend_id = "offline-image-stats-v1"

    async def score(self, pngs: list[bytes]) -> list[AestheticScore]:
        return [self.score_one(png) for png in pngs]

    def score_one(self, png: bytes) -> AestheticScore:
        value = stats_score(image_features(png))
        return AestheticScore(score=value, raw=value, backend=self.backend_id)

    async def aclose(self) -> None:
        return None
