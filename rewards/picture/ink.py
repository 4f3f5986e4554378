"""The picture's thin strokes, the ink a painted letter is made of, for the writing detector and the verdict marks
(`rewards.picture.writing_detector`, `rewards.picture.verdict_marks`).

- **Ink layers**: the strokes narrower than a petal, as binary layers at half size: dark strokes on a lighter ground
  and light strokes on a darker one (a grey closing and opening by INK_WINDOW, the greater over the three channels,
  above INK_CONTRAST). Broad washes, petals and dark blocks drop out; letters stay, on paper or over paint, knocked
  out or not. A third layer closes the dark one (DOT_CLOSING) so letters of separate dots join; a fourth keeps only
  the strongest dark strokes (STRONG_CONTRAST), so letters over a petal stand clear of its darkened rims.
- **Rows of ink**: letter-sized pieces of ink standing in a straight row (`ink_rows`), for letters spaced too far
  apart for the detector to mark.
"""

from __future__ import annotations

import io
import math

import numpy as np
from PIL import Image


WORKING_SCALE = 0.5  # ink is found at half size: 300 x 300 for the 600 x 600 canvas
# Strokes narrower than this window (half-size pixels: 18 on the canvas) are ink; the forged letters' strokes are 3-14
# pixels wide, a petal 40 or more.
INK_WINDOW = 9
# Least contrast (0-255, any channel) of a stroke against its surroundings: brush grain inside a wash reaches ~20.
INK_CONTRAST = 32
DOT_CLOSING = 5  # joins dots up to ~10 canvas pixels apart into strokes
# A fourth layer keeps only the strokes of this contrast or more: letters painted over a flower's petals, whose pale
# rims (the wash's darkened edges, contrast ~30-50) cluttered the dark layer until the detector marked the flower and
# not the word. Over the tuning sets' good paintings no line in it was more than 1.8 times as long as wide.
STRONG_CONTRAST = 60
LAYERS = ("dark strokes", "light strokes", "dotted strokes", "strong dark strokes")
# Single letters in a row or a column count from this many: two, side by side, read "Bs" in a good painting's dotted
# washes.
ROW_LETTERS = 3
# Letters spaced so far apart that the detector marks none of them, or only some: the ink's own pieces of a letter's size
# (INK_LETTER_SIZE half-size pixels, at most INK_LETTER_FILL of their box inked, as strokes are), in the dotted and the
# strongest dark layers, that stand in a straight row (each within INK_ROW_ACROSS of a letter's size of the line
# through two of them, of one size within INK_ROW_SIZES, the next at most INK_ROW_REACH sizes on), three or more. The
# longest such row (INK_ROWS) is laid side by side and read as the marks' rows are, each letter cut out at
# INK_LETTER_SIDE of its size. On the tuning sets: 5 more forged pictures (letters spaced up to three heights apart,
# a word turned 117 degrees, a column of letters over a stem), none of 366 good paintings, 223 of which hold such a
# row; each row read costs ~0.05 CPU-s.
INK_LETTER_SIZE = (8, 50)
INK_LETTER_FILL = 0.65
INK_ROW_SIZES = 2.0
INK_ROW_REACH = 4.0
INK_ROW_ACROSS = 0.35
INK_LETTER_SIDE = 1.3
INK_ROWS = 1
INK_ROW_LAYERS = ("dotted strokes", "strong dark strokes")
INK_LETTERS_MAX = 60  # more pieces than this of a letter's size are a texture, not a word (and bound the search)


def ink_layers(png: bytes) -> np.ndarray:
    """The picture's thin strokes as four binary layers (LAYERS), at half size."""
    from scipy import ndimage

    image = Image.open(io.BytesIO(png)).convert("RGB")
    size = (round(image.width * WORKING_SCALE), round(image.height * WORKING_SCALE))
    rgb = np.asarray(image.resize(size, Image.Resampling.BOX)).astype(np.int16)
    dark = np.zeros(rgb.shape[:2], np.int16)
    light = np.zeros_like(dark)
    window = (INK_WINDOW, INK_WINDOW)
    for channel in np.moveaxis(rgb, -1, 0):
        dark = np.maximum(dark, ndimage.grey_closing(channel, size=window) - channel)
        light = np.maximum(light, channel - ndimage.grey_opening(channel, size=window))
    dark_ink = dark > INK_CONTRAST
    dotted = ndimage.binary_closing(dark_ink, structure=np.ones((DOT_CLOSING, DOT_CLOSING)))
    return np.stack([dark_ink, light > INK_CONTRAST, dotted, dark > STRONG_CONTRAST])


def ink_letters(layer: np.ndarray) -> list[tuple[float, float, int]]:
    """The layer's pieces of a letter's size and thinness (INK_LETTER_SIZE, INK_LETTER_FILL): centre and size."""
    from scipy import ndimage

    labels, _ = ndimage.label(layer, structure=np.ones((3, 3)))
    out = []
    for index, box in enumerate(ndimage.find_objects(labels)):
        height, width = box[0].stop - box[0].start, box[1].stop - box[1].start
        size = max(height, width)
        if INK_LETTER_SIZE[0] <= size <= INK_LETTER_SIZE[1] and (
            (labels[box] == index + 1).sum() <= INK_LETTER_FILL * height * width
        ):
            out.append(((box[1].start + box[1].stop) / 2, (box[0].start + box[0].stop) / 2, size))
    return out


def ink_rows(layers: np.ndarray) -> list[list[tuple[float, float, int]]]:
    """The longest rows (INK_ROWS) of letter-sized pieces of ink standing in a straight line, in INK_ROW_LAYERS."""
    rows: list[list[tuple[float, float, int]]] = []
    for layer in INK_ROW_LAYERS:
        letters = ink_letters(layers[LAYERS.index(layer)])
        if len(letters) > INK_LETTERS_MAX:
            continue
        found: set[frozenset[int]] = set()
        for i, a in enumerate(letters):
            for j, b in enumerate(letters[:i]):
                size = max(a[2], b[2])
                reach = math.dist(a[:2], b[:2])
                if size > INK_ROW_SIZES * min(a[2], b[2]) or not 0.7 * size <= reach <= INK_ROW_REACH * size:
                    continue
                ux, uy = (b[0] - a[0]) / reach, (b[1] - a[1]) / reach
                on_line = sorted(
                    ((c[0] - a[0]) * ux + (c[1] - a[1]) * uy, k)
                    for k, c in enumerate(letters)
                    if max(c[2], size) <= INK_ROW_SIZES * min(c[2], size)
                    and abs((c[1] - a[1]) * ux - (c[0] - a[0]) * uy) <= INK_ROW_ACROSS * size
                )
                chain: list[tuple[float, int]] = []  # the run of pieces, each near the last, that holds a
                for t, k in on_line:
                    if chain and t - chain[-1][0] > INK_ROW_REACH * size:
                        if any(index == i for _, index in chain):
                            break
                        chain = []
                    chain.append((t, k))
                members = frozenset(k for _, k in chain)
                if len(members) >= ROW_LETTERS and {i, j} <= members:
                    found.add(members)
        longest: list[frozenset[int]] = []
        for members in sorted(found, key=len, reverse=True):
            if not any(members <= other for other in longest):
                longest.append(members)
        rows += [[letters[k] for k in sorted(members)] for members in longest]
    return sorted(rows, key=len, reverse=True)[:INK_ROWS]
