"""Does a painting show its subject's colours? The offline stand-ins' reading of the subject, and the on-subject share.

A subject names a flower and up to two colour words ("a white hibiscus with a crimson eye"). `subject_colours` reads it
as the warm start's generator does (`watercolour.policy.procedural`): the first colour word colours the petals, a
second one the heart; a subject with no colour word takes its flower's own colour (a sunflower is golden, a camellia
white), and an unnamed heart is the petal palette's heart wash. The palette of each colour word is
`procedural.PALETTES`, the washes the warm start paints with, so a scorer and the sketches it is taught on cannot
disagree about what "peach" is. A word's target hue is the circular mean hue of its three washes (docs/learning.md has
the table); "white" has no hue and is matched by low saturation, as a white flower is painted as its cool, nearly grey
shadows.

`subject_match` measures, over the painted pixels, the saturation-weighted share whose hue lies near the target
(full credit within HUE_FULL degrees, none beyond HUE_NONE) for the petals, and the same over the paint around the
painting's centre for the heart; the match is PETAL_SHARE of the first plus the rest of the second. Hue survives
thinning a wash with paper, which lightness and saturation do not. Its limit: warm neighbours less than ~15
degrees apart (peach, coral, red, orange) read as one family; blue against yellow, magenta against peach are
told apart cleanly.
"""

from __future__ import annotations

import colorsys
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from ground.palettes import PALETTES, SPECIES, species_of
from rewards.pixels import Pixels, analyse


HUE_FULL = 12.0
HUE_NONE = 36.0
# White: painted pixels at or under this saturation count fully, none at or above WHITE_NONE. Measured on renders:
# a white flower's shadow wash has median saturation 0.03 (90% under 0.14), a red wash 0.22 (90% over 0.15).
WHITE_FULL = 0.06
WHITE_NONE = 0.16
# A hued subject's petals must be mostly coloured paint: the hue share is scaled by the share of the petal paint
# over the saturation floor, from none at COLOURED_NONE to full at COLOURED_FULL. Measured on renders of every
# subject's sketch: white flowers 0.00-0.03, the palest hued petals (pale blue) 0.16, most 0.5-1.0. Without it, a
# grey flower with a few warm specks read as peach: only the specks were over the floor (docs/learning.md).
COLOURED_NONE = 0.05
COLOURED_FULL = 0.12
# The heart: paint within this share of the canvas side from the paint's centroid.
HEART_RADIUS = 0.07
PETAL_SHARE = 0.75
# A painting is on subject when most of its coloured paint has the petals' colour.
ON_SUBJECT = 0.5


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


def _hue_degrees(colour: str) -> tuple[float, float]:
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    hue, saturation, _ = colorsys.rgb_to_hsv(r, g, b)
    return hue * 360.0, saturation


def _circular_mean(degrees: list[float]) -> float:
    x = sum(math.cos(math.radians(d)) for d in degrees)
    y = sum(math.sin(math.radians(d)) for d in degrees)
    return math.degrees(math.atan2(y, x)) % 360.0


@cache
def target_hue(word: str) -> float | None:
    """The hue (degrees) the petals of colour `word` are matched against; None for white (matched by saturation)."""
    if word == "white":
        return None
    return _circular_mean([_hue_degrees(colour)[0] for colour in PALETTES[word][:3]])


@cache
def heart_hue(colours: SubjectColours) -> float | None:
    """The heart's target hue: the named heart colour's deep wash, else the petal palette's heart wash."""
    if colours.heart is not None:
        return target_hue(colours.heart)
    hue, saturation = _hue_degrees(PALETTES[colours.petals][3])
    return hue if saturation > 0.3 else None


def _colour_share(pixels: Pixels, mask: np.ndarray, hue: float | None) -> float:
    """Saturation-weighted share of the paint under `mask` whose colour is `hue` (None: white)."""
    painted = mask & pixels.paint
    if not painted.any():
        return 0.0
    saturation = pixels.saturation[painted]
    if hue is None:
        return float(np.clip((WHITE_NONE - saturation) / (WHITE_NONE - WHITE_FULL), 0.0, 1.0).mean())
    coloured = saturation > 0.15
    if not coloured.any():
        return 0.0
    distance = np.abs((pixels.hue[painted][coloured] * 360.0 - hue + 180.0) % 360.0 - 180.0)
    credit = np.clip((HUE_NONE - distance) / (HUE_NONE - HUE_FULL), 0.0, 1.0)
    weights = saturation[coloured]
    enough = np.clip((coloured.mean() - COLOURED_NONE) / (COLOURED_FULL - COLOURED_NONE), 0.0, 1.0)
    return float(enough * (credit * weights).sum() / weights.sum())


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
    # off the heart). Counted over all the paint, a grey (white) flower's washes fall
    # under the saturation floor and its saturated heart alone decided: a white hibiscus with a red eye read as
    # a peach one (docs/experiments/2026-12-01-colour-blind-warm-start.md).
    petals = _colour_share(pixels, distance > 2 * HEART_RADIUS * max(h, w), target_hue(colours.petals))
    heart = _colour_share(pixels, centre, heart_hue(colours))
    return SubjectMatch(petals, heart, PETAL_SHARE * petals + (1.0 - PETAL_SHARE) * heart)


def subject_match(png: bytes, subject: str) -> SubjectMatch:
    """How far the painting in `png` shows the colours `subject` names."""
    return match_pixels(analyse(png), subject)


def off_colour(subject: str, other: str) -> bool:
    """Whether `other`'s petals would read as off `subject`'s colour (white against a hue, or hues apart)."""
    mine, theirs = target_hue(subject_colours(subject).petals), target_hue(subject_colours(other).petals)
    if mine is None or theirs is None:
        return (mine is None) != (theirs is None)
    return abs((mine - theirs + 180.0) % 360.0 - 180.0) >= HUE_NONE - HUE_FULL


def neighbours(subject: str, subjects: Sequence[str], count: int = 3) -> list[str]:
    """Up to `count` subjects of `subjects` in other colours, the same flower first (a peach hibiscus's are the
    white, magenta and yellow hibiscus): what a warm start paints beside the subject, so that a policy starts out
    unsure of the colour and GRPO has the subject's colours to learn."""
    flower = subject_colours(subject).flower
    others = [other for other in subjects if other != subject and off_colour(subject, other)]
    others.sort(key=lambda other: subject_colours(other).flower != flower)  # stable: list order within each
    return others[:count]
