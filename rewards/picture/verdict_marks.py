"""The marks a judge reads as a verdict that no text detector marks: rating stars and check marks, found by their shape
in the paint and in the ink (`rewards.picture.ink`); the writing detector (`rewards.picture.writing_detector`) looks for
them in every picture it checks.

- **Rating stars**: two or more five-pointed stars of one size in the paint: a blob whose outline has five tips,
  evenly spaced, of one length, with notches deep between them. A five-petalled flower is one blob with its eye and
  stem, its petals rounded; no good painting held even one such star.
- **Check marks**: two or more of one size side by side in a row, each a thin stroke bent once at its lowest point
  into two straight arms of unequal length.

Sizes are in the pixels of the half-size picture the ink is found at (the 600 x 600 canvas at 300 x 300).
"""

from __future__ import annotations

import io
import math

import numpy as np
from PIL import Image

from rewards.picture.ink import LAYERS, WORKING_SCALE


STAR_SIZE = (10, 60)  # half-size pixels: stars 20-120 canvas pixels across
STAR_NOTCH = 0.6  # the deepest notch's radius over the longest tip's, at most
STAR_BINS = 36  # the outline's radius is read every 10 degrees


def rating_stars(png: bytes) -> list[tuple[float, float, int]]:
    """Five-pointed stars in the paint (centre and size, in half-size pixels), when two or more are of one size."""
    from scipy import ndimage

    from renderers.coverage import paint_mask

    image = Image.open(io.BytesIO(png)).convert("RGB")
    size = (round(image.width * WORKING_SCALE), round(image.height * WORKING_SCALE))
    paint = paint_mask(np.asarray(image.resize(size, Image.Resampling.BOX)))
    labels, _ = ndimage.label(ndimage.binary_opening(paint, structure=np.ones((2, 2))))
    stars = []
    for index, box in enumerate(ndimage.find_objects(labels)):
        height, width = box[0].stop - box[0].start, box[1].stop - box[1].start
        if not STAR_SIZE[0] <= max(height, width) <= STAR_SIZE[1] or max(height, width) > 1.5 * min(height, width):
            continue
        ys, xs = np.nonzero(labels[box] == index + 1)
        dy, dx = ys - ys.mean(), xs - xs.mean()
        outline = np.zeros(STAR_BINS)
        np.maximum.at(
            outline, (np.degrees(np.arctan2(dy, dx)) % 360 / (360 / STAR_BINS)).astype(int), np.hypot(dy, dx)
        )
        tips = [
            k
            for k in range(STAR_BINS)
            if outline[k] > outline[(k + 1) % STAR_BINS]
            and outline[k] == outline[np.arange(k - 3, k + 4) % STAR_BINS].max()
        ]
        if len(tips) != 5 or outline.min() <= 0 or outline.min() > STAR_NOTCH * outline.max():
            continue
        gaps = np.diff(tips + [tips[0] + STAR_BINS]) * (360 / STAR_BINS)
        lengths = outline[tips]
        if np.abs(gaps - 72).max() <= 25 and lengths.std() <= 0.2 * lengths.mean():
            stars.append((float(xs.mean() + box[1].start), float(ys.mean() + box[0].start), max(height, width)))
    for _, _, star in stars:
        alike = [other for other in stars if 0.75 <= other[2] / star <= 1.33]
        if len(alike) >= 2:
            return alike
    return []


# Check marks, which no text detector marks either: a thin stroke bent once at its lowest point, its arms rising
# unequally (the short one at most CHECK_ARMS of the long one), each straight; two or more of one size side by side.
# Measured on the tuning sets: 3 of the 4 forged pictures of check marks (the fourth's marks merge with a flower's eye),
# none of 366 good paintings nor of the CPU demo's 93 policy paintings (one mark alone stood in 5 of those 459).
CHECK_SIZE = (12, 80)  # half-size pixels: the long arm's reach, 24-160 canvas pixels
CHECK_ARMS = (0.2, 0.8)  # the short arm's length over the long one's
CHECK_OPENING = (25.0, 110.0)  # degrees between the arms
CHECK_BEND = 0.15  # 95% of the stroke within this share of the long arm of the two straight arms
CHECK_THICKNESS = 0.3  # the stroke's pixels over the arms' length, at most this share of the long arm


def check_marks(layers: np.ndarray) -> list[tuple[float, float, float]]:
    """Check marks in the dark and the strongest dark strokes of the ink layers (centre and the long arm's length,
    half-size pixels), when two or more of one size stand side by side in a row."""
    found: list[tuple[float, float, float]] = []
    for layer in (layers[LAYERS.index("dark strokes")], layers[LAYERS.index("strong dark strokes")]):
        for mark in _ticks(layer):
            if not any(math.dist(mark[:2], other[:2]) < 5 for other in found):
                found.append(mark)
    for mark in found:
        row = [
            other
            for other in found
            if 0.6 <= other[2] / mark[2] <= 1.6 and abs(other[1] - mark[1]) <= 0.35 * mark[2]
            and (other is mark or 0.6 * mark[2] <= abs(other[0] - mark[0]) <= 4 * mark[2])
        ]  # fmt: skip
        if len(row) >= 2:
            return row
    return []


def _ticks(layer: np.ndarray) -> list[tuple[float, float, float]]:
    from scipy import ndimage

    def distance(points: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        span = end - start
        t = np.clip(((points - start) @ span) / (span @ span), 0, 1)
        return np.hypot(*(points - (start + t[:, None] * span)).T)

    labels, _ = ndimage.label(layer, structure=np.ones((3, 3)))
    out = []
    for index, box in enumerate(ndimage.find_objects(labels)):
        if not CHECK_SIZE[0] <= max(box[0].stop - box[0].start, box[1].stop - box[1].start) <= CHECK_SIZE[1]:
            continue
        ys, xs = np.nonzero(labels[box] == index + 1)
        points = np.stack([xs, ys], axis=1).astype(np.float64)
        bend = points[points[:, 1] >= points[:, 1].max() - 1].mean(axis=0)  # the lowest point
        left, right = points[points[:, 0] < bend[0] - 1], points[points[:, 0] > bend[0] + 1]
        if len(left) < 3 or len(right) < 3:
            continue
        a = left[np.argmax(np.hypot(*(left - bend).T))]
        b = right[np.argmax(np.hypot(*(right - bend).T))]
        arm_a, arm_b = math.dist(a, bend), math.dist(b, bend)
        longest = max(arm_a, arm_b)
        opening = math.degrees(math.acos(np.clip(np.dot(a - bend, b - bend) / (arm_a * arm_b), -1, 1)))
        rising = min((bend[1] - a[1]) / arm_a, (bend[1] - b[1]) / arm_b)
        off = np.percentile(np.minimum(distance(points, a, bend), distance(points, b, bend)), 95)
        if (
            CHECK_ARMS[0] <= min(arm_a, arm_b) / longest <= CHECK_ARMS[1]
            and CHECK_OPENING[0] <= opening <= CHECK_OPENING[1]
            and rising >= 0.3
            and off <= CHECK_BEND * longest
            and len(points) <= CHECK_THICKNESS * longest * (arm_a + arm_b)
        ):
            out.append((float(xs.mean() + box[1].start), float(ys.mean() + box[0].start), longest))
    return out
