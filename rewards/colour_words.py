"""Which colour word a painted colour is: each word's washes as the renderer lays them on paper, and the nearest one.

A wash thinned with paper is not the wash's colour mixed in a straight line with the paper's: p5.brush mixes pigment
and paper by Kubelka-Munk over 38 wavelengths, so a thin orange reads nearly yellow and a thin red rose-pink. The
stand-ins therefore know each wash of `ground.palettes` (every colour `petal_washes` and `heart_washes` list) by
its measured curve on the warm start's paper: the CIELAB colours of a swatch of it, binned from the palest paint to the
deepest (`colour_words.json`, written by `python -m bench.colour_words --calibrate`). A painted pixel is named by the
word whose curves come nearest in CIEDE2000, so a pale peach wash is peach and a deep one too, while a rose wash lies
nearer crimson and red at every depth. A pixel farther than FAR from every word (a green leaf, a brown stem) is none.

Naming a colour costs a few hundred CIEDE2000 differences; the names of the 64 levels a channel of each colour are
kept for the process (`ColourNames`), so a run pays for each colour once.
"""

from __future__ import annotations

import hashlib
import json
import threading
from functools import cache
from pathlib import Path

import numpy as np

from ground.palettes import PALETTES, heart_washes, petal_washes
from rewards.colour_difference import ciede2000, srgb_to_lab


CURVES_FILE = Path(__file__).with_name("colour_words.json")
WORDS: tuple[str, ...] = tuple(PALETTES)
# A pixel this far (CIEDE2000) from every word's curves is none of them. Measured on the table's renders
# (`bench.colour_words`): the named and compact sketches' paint lies within 1.4 of its own word's curves (90th
# percentile, 1.8 at the 95th); 90% of the full style's green leaves and stems lie 4.3 or more from every word.
FAR = 4.0
# Colours are looked up at 6 bits a channel: a step of 4 levels is under 1 CIEDE2000 on the pale washes.
LEVEL_BITS = 6


class CalibrationMissing(RuntimeError):
    """`colour_words.json` lacks a wash the palette table paints with."""


@cache
def wash_curves() -> dict[str, np.ndarray]:
    """Each calibrated wash's curve: (points, 3) CIELAB colours from its palest paint on the paper to its deepest."""
    calibration = json.loads(CURVES_FILE.read_text())
    curves = {colour: np.array(points, dtype=np.float64) for colour, points in calibration["curves"].items()}
    wanted = {colour for word in WORDS for colour in (*petal_washes(word), *heart_washes(word))}
    if missing := sorted(wanted - set(curves)):
        raise CalibrationMissing(
            f"{CURVES_FILE.name} has no curve for {', '.join(missing)}: the palette table changed; "
            "run `python -m bench.colour_words --calibrate`"
        )
    return curves


@cache
def reading_id() -> str:
    """Names the colour reading in the cache key of a subject-read score: a digest of the calibration, so a run
    resumed after the palette or the curves changed scores its rollouts afresh."""
    return "colour-words:" + hashlib.sha256(CURVES_FILE.read_bytes()).hexdigest()[:12]


def targets() -> list[np.ndarray]:
    """What the lookup table's columns measure a distance to: each word's petal washes, then each word's heart."""
    curves = wash_curves()
    petals = [np.vstack([curves[colour] for colour in petal_washes(word)]) for word in WORDS]
    hearts = [np.vstack([curves[colour] for colour in heart_washes(word)]) for word in WORDS]
    return petals + hearts


class ColourNames:
    """CIEDE2000 from a colour to each word's petal curves (columns 0..11) and heart curves (12..23), looked up in a
    table over the sRGB cube at LEVEL_BITS a channel that fills in as colours are met."""

    def __init__(self) -> None:
        self._targets = targets()
        levels = 1 << LEVEL_BITS
        self._table = np.full((levels**3, len(self._targets)), np.nan, dtype=np.float32)
        self._lock = threading.Lock()

    def distances(self, rgb: np.ndarray) -> np.ndarray:
        """(n, 24) distances of n sRGB colours (0..255)."""
        shift = 8 - LEVEL_BITS
        q = rgb.astype(np.int64) >> shift
        keys = (q[:, 0] << (2 * LEVEL_BITS)) | (q[:, 1] << LEVEL_BITS) | q[:, 2]
        with self._lock:
            new = np.unique(keys[np.isnan(self._table[keys, 0])])
            if new.size:
                mask = (1 << LEVEL_BITS) - 1
                levels = np.stack([new >> (2 * LEVEL_BITS), (new >> LEVEL_BITS) & mask, new & mask], axis=1)
                lab = srgb_to_lab((levels << shift) + (1 << shift) / 2)
                self._table[new] = np.stack(
                    [ciede2000(lab[:, None, :], curve[None]).min(axis=1) for curve in self._targets], axis=1
                )
            return self._table[keys]


@cache
def colour_names() -> ColourNames:
    return ColourNames()


@cache
def word_gap(first: str, second: str) -> float:
    """How far apart two words' paint lies: the median CIEDE2000 from a point of one word's petal curves to the other's
    nearest, averaged both ways (0 for a word and itself)."""
    curves = targets()
    one, other = curves[WORDS.index(first)], curves[WORDS.index(second)]
    distances = ciede2000(one[:, None, :], other[None, :, :])
    return float((np.median(distances.min(axis=1)) + np.median(distances.min(axis=0))) / 2)
