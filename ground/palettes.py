"""The subjects' flowers: each species' build and each colour word's washes.

The procedural painter (`watercolour.policy.procedural`) paints with them and the offline stand-ins
(`rewards.subject_match`) read a painting against them, so a scorer and the sketches it is taught on agree on what
"a peach hibiscus" looks like.
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
    "peach": ("#f9c9a8", "#f4a582", "#e07a5f", "#a3203c"),
    "coral": ("#f8a98f", "#f2765f", "#d9503f", "#8e1f2b"),
    "magenta": ("#f0a6cf", "#de5ba7", "#b8267e", "#6e1447"),
    "yellow": ("#fbe38a", "#f6c945", "#e5a31c", "#b8401f"),
    "golden": ("#f9d77e", "#f2b632", "#d98e12", "#6b4226"),
    "pink": ("#f7c1cf", "#ef93ad", "#d9607f", "#e8b44c"),
    "red": ("#f58b7a", "#e2483d", "#b8231f", "#2b1a22"),
    "blue": ("#b9cdf0", "#8aa8e6", "#5b78cf", "#f1e7a6"),
    "white": ("#e3dbe6", "#d1c9dc", "#b9b2cc", "#e6c65a"),
    "orange": ("#fbc078", "#f69a3a", "#e0701c", "#8a3a12"),
    "purple": ("#c9b0e0", "#9f7cc9", "#6f4aa6", "#241a3a"),
    "crimson": ("#f08a93", "#d94a5c", "#a9213a", "#3d0f1c"),
}


def species_of(subject: str) -> str:
    """The flower `subject` names (a key of SPECIES); a hibiscus when it names none."""
    text = subject.lower()
    return next((name for name in SPECIES if name in text), "hibiscus")
