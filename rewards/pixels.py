"""A picture as the offline stand-ins see it: shrunk, its paint found, in HSV.

Shared by the image-statistics scorer and judge (`rewards.offline_aesthetic`, `rewards.judging.offline_judge`) and the
subject match (`rewards.subject_match`), so a picture is decoded once per score.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
from PIL import Image

from renderers.coverage import paint_mask, paper_colour


# Small enough to keep a score under a few milliseconds; large enough that a hard edge stays one pixel wide.
ANALYSIS_SIZE = 160


@dataclass(frozen=True)
class Pixels:
    """A picture shrunk to ANALYSIS_SIZE: its pixels, its paper, which pixels are paint, and their HSV."""

    rgb: np.ndarray
    paper: np.ndarray  # the paper's sRGB colour (`renderers.coverage.paper_colour`)
    paint: np.ndarray
    hue: np.ndarray  # 0..1
    saturation: np.ndarray


def analyse(png: bytes) -> Pixels:
    """Decode, shrink with a box filter, and find the paint and its hue and saturation."""
    canvas = Image.open(io.BytesIO(png)).convert("RGB")  # opaque: the renderer put it on its paper (renderers.paper)
    canvas.thumbnail((ANALYSIS_SIZE, ANALYSIS_SIZE), Image.Resampling.BOX)
    levels = np.asarray(canvas)
    paper = paper_colour(levels)
    paint = paint_mask(levels, paper)
    rgb = levels.astype(np.float64)
    top, bottom = rgb.max(axis=-1), rgb.min(axis=-1)
    saturation = np.where(top > 0, (top - bottom) / np.maximum(top, 1e-9), 0.0)
    return Pixels(rgb, paper, paint, _hue(rgb, top, bottom), saturation)


def _hue(rgb: np.ndarray, top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """HSV hue in 0..1, vectorised (0 where the pixel is grey)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    span = np.maximum(top - bottom, 1e-9)
    hue = np.where(top == r, (g - b) / span, np.where(top == g, 2.0 + (b - r) / span, 4.0 + (r - g) / span))
    return np.where(top > bottom, (hue / 6.0) % 1.0, 0.0)
