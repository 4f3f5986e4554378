"""Small PNGs made with PIL for the scorer and judge tests: a blank page, a flat blob, a layered wash."""

from __future__ import annotations

import io
import random

from PIL import Image, ImageDraw, ImageFilter


PAPER = (246, 240, 228)


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def blank(size: int = 256) -> bytes:
    return png(Image.new("RGB", (size, size), PAPER))


def flat_blob(size: int = 256, colour: tuple[int, int, int] = (200, 60, 90)) -> bytes:
    """One opaque, hard-edged, single-colour disc: what the judge criteria call a muddy flat blob."""
    image = Image.new("RGB", (size, size), PAPER)
    ImageDraw.Draw(image).ellipse((size * 0.3, size * 0.3, size * 0.7, size * 0.7), fill=colour)
    return png(image)


def layered_wash(size: int = 256, seed: int = 0, soft: bool = True) -> bytes:
    """Translucent, overlapping washes in a few hues, gathered in the middle, paper showing around them.

    `soft=False` leaves their edges hard: the same painting done worse."""
    rng = random.Random(seed)
    image = Image.new("RGBA", (size, size), (*PAPER, 255))
    for colour in [(242, 140, 106), (176, 48, 90), (230, 170, 80), (90, 140, 90)]:
        layer = Image.new("RGBA", (size, size), (0, 0, 0, 0))
        x, y = size * rng.uniform(0.3, 0.5), size * rng.uniform(0.3, 0.5)
        radius = size * rng.uniform(0.15, 0.22)
        ImageDraw.Draw(layer).ellipse((x - radius, y - radius, x + radius, y + radius), fill=(*colour, 90))
        image.alpha_composite(layer.filter(ImageFilter.GaussianBlur(size / 60)) if soft else layer)
    return png(image)


def solid(width: int, height: int = 32, colour: tuple[int, int, int] = (120, 80, 160)) -> bytes:
    """A plain rectangle whose width tells tests apart (the fake servers read it back)."""
    return png(Image.new("RGB", (width, height), colour))


def width_of(data: bytes) -> int:
    return Image.open(io.BytesIO(data)).width
