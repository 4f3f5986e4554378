"""One picture for everyone: what leaves the renderer is opaque, composited over the paper once."""

from __future__ import annotations

import io

from PIL import Image

from ground.reference_pool import load_pool
from renderers.coverage import paint_coverage
from renderers.paper import PAPER, on_paper


def png_of(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def test_an_opaque_picture_keeps_its_bytes():
    for reference in load_pool()[:5]:
        assert on_paper(reference.png) == reference.png


def test_a_transparent_sheet_becomes_the_paper_and_half_alpha_paint_is_blended_over_it():
    sheet = Image.new("RGBA", (40, 40), (0, 0, 0, 0))
    sheet.paste((200, 40, 80, 128), (10, 10, 30, 30))
    out = Image.open(io.BytesIO(on_paper(png_of(sheet))))
    assert out.mode == "RGB"
    assert out.getpixel((0, 0)) == PAPER
    assert out.getpixel((20, 20)) == (227, 147, 167)  # (200, 40, 80) at alpha 128/255 over white


def test_white_paint_on_a_transparent_sheet_is_no_paint_to_anyone():
    sheet = Image.new("RGBA", (60, 60), (0, 0, 0, 0))
    sheet.paste((255, 255, 255, 255), (0, 0, 30, 60))
    assert paint_coverage(on_paper(png_of(sheet))) == 0.0
