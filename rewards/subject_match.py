"""Does a painting show its subject's colours? The offline stand-ins' reading of the subject, and the on-subject share.

A subject names a flower and up to two colour words ("a white hibiscus with a crimson eye"). `subject_colours` reads it
as the warm start's generator does (`watercolour.policy.procedural`): the first colour word colours the petals, a
second one the heart; a subject with no colour word takes its flower's own colour (a sunflower is golden, a camellia
white), and an unnamed heart is the petal palette's heart wash.

`match_pixels` names each painted pixel by its nearest colour word in CIEDE2000 (`rewards.colour_words`: each word's
washes as the renderer lays them on paper, pale to deep), so a pale peach wash is still peach and a rose wash is not.
The petal match is the share of the petal paint (the paint outside twice the heart's radius) named the subject's petal
word, each pixel weighted by how far it lies from the paper (a barely tinted pixel is near every word's palest
paint); the heart match is the share of the paint around the painting's centre within reach of the heart's washes.
The match is PETAL_SHARE of the first plus the rest of the second, and a painting is on subject when most of its petal
paint is the subject's word. docs/learning.md has the table of what it tells apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ground.palettes import PALETTES, SPECIES, species_of
from rewards.colour_difference import ciede2000, srgb_to_lab
from rewards.colour_words import FAR, WORDS, colour_names, word_gap
from rewards.pixels import Pixels, analyse


# A pixel's weight ramps with its CIEDE2000 from the paper, from none at DEPTH_NONE to full at DEPTH_FULL. A pixel
# counts as paint from about 4 (16 levels in one channel); the washes' curves of neighbouring words lie within 2-3 of
# each other below 6 and part above it.
DEPTH_NONE = 3.0
DEPTH_FULL = 10.0
# The heart's paint counts fully within HEART_NEAR of its washes' curves, not at all beyond HEART_FAR.
HEART_NEAR = 4.0
HEART_FAR = 10.0
# The heart: paint within this share of the canvas side from the paint's centroid.
HEART_RADIUS = 0.07
PETAL_SHARE = 0.75
# A painting is on subject when most of its petal paint is named the subject's petal word.
ON_SUBJECT = 0.5
# Two words whose paint lies this far apart (`colour_words.word_gap`) are off each other's colour: a warm start's
# neighbours. Measured gaps: peach is 3.5 from coral and 7.6 from orange, 9.6 from red, 12.6 from white, 16.3 from
# magenta and yellow; yellow is 3.6 from golden.
OFF_GAP = 8.0


@dataclass(frozen=True)
class SubjectColours:
    """What a subject asks for, in colours: the petal and heart colour words and the flower."""

    subject: str
    flower: str
    petals: str
    heart: str | None  # a colour word the subject names for the heart, else None (the petal palette's heart wash)


def subject_colours(subject: str) -> SubjectColours:
    """The flower and colour words of `subject` (the first colour word is the petals', a second the heart's)."""
    text = subject.lower()
    flower = species_of(subject)
    named = sorted((text.find(word), word) for word in PALETTES if re_word(word, text))
    petals = named[0][1] if named else SPECIES[flower].colour
    return SubjectColours(subject, flower, petals, named[1][1] if len(named) > 1 else None)


def re_word(word: str, text: str) -> bool:
    """`word` as a whole word of `text` ("red" is not in "coloured")."""
    return re.search(rf"\b{re.escape(word)}\b", text) is not None


def _weights(pixels: Pixels, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sRGB colours of the paint under `mask` and each one's weight by its distance from the paper."""
    rgb = pixels.rgb[mask & pixels.paint]
    depth = ciede2000(srgb_to_lab(rgb), srgb_to_lab(pixels.paper))
    return rgb, np.clip((depth - DEPTH_NONE) / (DEPTH_FULL - DEPTH_NONE), 0.0, 1.0)


def _petal_share(pixels: Pixels, mask: np.ndarray, word: str) -> float:
    """The weighted share of the paint under `mask` whose nearest colour word is `word`."""
    rgb, weights = _weights(pixels, mask)
    if weights.sum() == 0:
        return 0.0
    distances = colour_names().distances(rgb)[:, : len(WORDS)]
    named = (distances.argmin(axis=1) == WORDS.index(word)) & (distances.min(axis=1) <= FAR)
    return float((weights * named).sum() / weights.sum())


def _heart_share(pixels: Pixels, mask: np.ndarray, colours: SubjectColours) -> float:
    """The weighted share of the paint under `mask` within reach of the heart's washes: the named heart word's, else
    the petal palette's heart wash."""
    rgb, weights = _weights(pixels, mask)
    if weights.sum() == 0:
        return 0.0
    column = WORDS.index(colours.heart) if colours.heart else len(WORDS) + WORDS.index(colours.petals)
    distance = colour_names().distances(rgb)[:, column]
    credit = np.clip((HEART_FAR - distance) / (HEART_FAR - HEART_NEAR), 0.0, 1.0)
    return float((weights * credit).sum() / weights.sum())


@dataclass(frozen=True)
class SubjectMatch:
    """How far a painting shows its subject's colours, all in 0..1."""

    petals: float
    heart: float
    match: float

    @property
    def on_subject(self) -> bool:
        return self.petals >= ON_SUBJECT


def match_pixels(pixels: Pixels, subject: str) -> SubjectMatch:
    colours = subject_colours(subject)
    if not pixels.paint.any():
        return SubjectMatch(0.0, 0.0, 0.0)
    h, w = pixels.paint.shape
    ys, xs = np.nonzero(pixels.paint)
    yy, xx = np.mgrid[0:h, 0:w]
    distance = np.hypot(yy - ys.mean(), xx - xs.mean())
    centre = distance <= HEART_RADIUS * max(h, w)
    # The petals are the paint outside twice the heart's radius (its bleed, and a centroid that faint washes pull
    # off the heart): counted over all the paint, a white hibiscus with a red eye read as a peach one
    # (lab/studies/2026-12-01-colour-blind-warm-start.md).
    petals = _petal_share(pixels, distance > 2 * HEART_RADIUS * max(h, w), colours.petals)
    heart = _heart_share(pixels, centre, colours)
    return SubjectMatch(petals, heart, PETAL_SHARE * petals + (1.0 - PETAL_SHARE) * heart)


def subject_match(png: bytes, subject: str) -> SubjectMatch:
    """How far the painting in `png` shows the colours `subject` names."""
    return match_pixels(analyse(png), subject)


def off_colour(subject: str, other: str) -> bool:
    """Whether `other`'s petals read as off `subject`'s colour: their words' curves lie apart (`word_gap`)."""
    return word_gap(subject_colours(subject).petals, subject_colours(other).petals) >= OFF_GAP


def neighbours(subject: str, subjects: Sequence[str], count: int = 3) -> list[str]:
    """Up to `count` subjects of `subjects` in other colours, the same flower first (a peach hibiscus's are the
    white, magenta and yellow hibiscus): what a warm start paints beside the subject, so that a policy starts out
    unsure of the colour and GRPO has the subject's colours to learn."""
    flower = subject_colours(subject).flower
    others = [other for other in subjects if other != subject and off_colour(subject, other)]
    others.sort(key=lambda other: subject_colours(other).flower != flower)  # stable: list order within each
    return others[:count]
