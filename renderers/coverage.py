"""Paint coverage: the share of canvas pixels that are paint rather than paper."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


# A pixel is paint when one of its channels differs from the paper colour by more than this many levels.
# Measured on the seed pool: 8 counts p5.brush's faint bleed halo as paint, 32 misses pale first washes.
PAINT_THRESHOLD = 16


def paper_colour(rgb: np.ndarray) -> np.ndarray:
    """The paper is the most common colour: quantise to 4 bits per channel, take the modal bin's mean colour.

    Using the mode rather than a fixed cream means any ground the sketch chose counts as paper.
    """
    flat = rgb.reshape(-1, 3)
    bins = (flat >> 4).astype(np.int32)
    keys = (bins[:, 0] << 8) | (bins[:, 1] << 4) | bins[:, 2]
    modal = np.bincount(keys).argmax()
    return flat[keys == modal].mean(axis=0)


def paint_mask(rgb: np.ndarray, paper: np.ndarray | None = None) -> np.ndarray:
    """Which pixels of an RGB picture (uint8) are paint: a channel more than PAINT_THRESHOLD from the paper colour
    (`paper_colour`, unless given).

    Each channel's 256 levels are compared with the paper once and the pixels looked up: the same comparisons as per
    pixel, 8 ms against 27 at 600 x 600, 7 of them finding the paper."""
    if paper is None:
        paper = paper_colour(rgb)
    paint_level = np.abs(np.arange(256, dtype=np.int16) - paper[:, None]) > PAINT_THRESHOLD  # a row a channel
    return paint_level[0][rgb[..., 0]] | paint_level[1][rgb[..., 1]] | paint_level[2][rgb[..., 2]]


def paint_coverage(png: bytes) -> float:
    """Share of pixels whose max-channel distance from the paper colour exceeds PAINT_THRESHOLD."""
    # The renderer's pictures are opaque (renderers.paper): composited over the paper once, there.
    return float(paint_mask(np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))).mean())
