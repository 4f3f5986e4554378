"""The subjects' flowers: each species' build and each colour word's washes, in hex and in CSS names.

The procedural painter (`watercolour.policy.procedural`) paints with them and the offline stand-ins
(`rewards.colour_words`) name a painted colour by how these washes look on paper, so a scorer and the sketches it is
taught on agree on what "a peach hibiscus" looks like.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Species:
    """How a kind of flower is built: rings of petals as (count range, reach scale, width factor)."""

    rings: tuple[tuple[tuple[int, int], float, float], ...]
    shape: str  # the petal helper's outline: a key of PETAL_OUTLINES
    centre: str  # "eye", "disc", "dots", "trumpet" or "button"
    colour: str  # the palette when the subject names no colour


SPECIES: dict[str, Species] = {
    "hibiscus": Species((((5, 5), 1.0, 1.15),), "lobed", "eye", "peach"),
    "peony": Species((((6, 7), 1.0, 1.0), ((5, 5), 0.62, 1.0)), "rounded", "button", "pink"),
    "poppy": Species((((4, 5), 1.0, 1.2),), "lobed", "dots", "red"),
    "sunflower": Species((((12, 14), 1.0, 0.9),), "pointed", "disc", "golden"),
    "morning glory": Species((((5, 5), 1.0, 1.25),), "lobed", "button", "blue"),
    "camellia": Species((((6, 8), 1.0, 0.9), ((5, 6), 0.6, 0.9)), "rounded", "button", "white"),
    "marigold": Species((((9, 11), 1.0, 0.8), ((6, 8), 0.65, 0.8)), "rounded", "button", "orange"),
    "anemone": Species((((6, 6), 1.0, 0.95),), "rounded", "dots", "purple"),
    "daffodil": Species((((6, 6), 1.0, 0.8),), "pointed", "trumpet", "golden"),
}


# Washes from pale to deep (first glaze to last), then the heart colour; `_shade` varies them per seed. White
# flowers are painted as their cool shadows: pure white on cream paper leaves no visible paint.
PALETTES: dict[str, tuple[str, str, str, str]] = {
    "peach": ("#f9c9a8", "#f4a582", "#e88d63", "#a3203c"),
    "coral": ("#f78f86", "#f2765f", "#d9503f", "#8e1f2b"),
    "magenta": ("#f0a6cf", "#de5ba7", "#b8267e", "#6e1447"),
    "yellow": ("#fcef9c", "#fbe04a", "#f2cc1c", "#b8401f"),
    "golden": ("#f5d27e", "#e0a82c", "#bf8a12", "#6b4226"),
    "pink": ("#f7c1cf", "#f0a3bb", "#e07d9c", "#e8b44c"),
    "red": ("#e35660", "#d6312f", "#a91d1d", "#2b1a22"),
    "blue": ("#b9cdf0", "#8aa8e6", "#5b78cf", "#f1e7a6"),
    "white": ("#dcd5e2", "#c3bcd3", "#a49dbc", "#e6c65a"),
    "orange": ("#fbc078", "#f69a3a", "#e0701c", "#8a3a12"),
    "purple": ("#c9b0e0", "#9f7cc9", "#6f4aa6", "#241a3a"),
    "crimson": ("#e85a74", "#dc2f4f", "#b0183a", "#3d0f1c"),
}


# The compact style paints a white flower in this one grey violet: one pale wash covers too little paper to show.
WHITE_SHADOW = "#7d77a8"

# The "named" style's washes per colour word: a mid and a deep petal wash and the heart, as CSS names. A name is one
# choice of a few whole tokens, where six hex digits let a policy write a colour half right or half written
# (lab/studies/2026-12-01-subject-demo-on-cpu.md). White's shadow is a neutral grey: a grey-blue read as a pale
# blue flower.
NAMED_WASHES: dict[str, tuple[str, str, str]] = {
    "peach": ("lightsalmon", "darksalmon", "crimson"),
    "coral": ("tomato", "tomato", "maroon"),
    "magenta": ("hotpink", "mediumvioletred", "purple"),
    "yellow": ("gold", "yellow", "sienna"),
    "golden": ("goldenrod", "darkgoldenrod", "saddlebrown"),
    "pink": ("lightpink", "palevioletred", "gold"),
    "red": ("firebrick", "brown", "maroon"),
    "blue": ("cornflowerblue", "royalblue", "khaki"),
    "white": ("darkgray", "gray", "gold"),
    "orange": ("sandybrown", "chocolate", "saddlebrown"),
    "purple": ("mediumpurple", "rebeccapurple", "indigo"),
    "crimson": ("crimson", "indianred", "maroon"),
}


def petal_washes(word: str) -> tuple[str, ...]:
    """Every colour the warm start paints the petals of `word` with: its hex washes, its CSS names, and for white the
    compact style's shadow."""
    return (*PALETTES[word][:3], *NAMED_WASHES[word][:2], *((WHITE_SHADOW,) if word == "white" else ()))


def heart_washes(word: str) -> tuple[str, ...]:
    """The colours of the heart `word`'s palette paints when the subject names no heart colour."""
    return PALETTES[word][3], NAMED_WASHES[word][2]


def species_of(subject: str) -> str:
    """The flower `subject` names (a key of SPECIES); a hibiscus when it names none."""
    text = subject.lower()
    return next((name for name in SPECIES if name in text), "hibiscus")
