"""The harness owns the paper: the picture that leaves the renderer is opaque, composited over the paper once.

A WEBGL canvas starts transparent, and p5.brush's washes over a sheet that `background()` never covered keep their
alpha in the PNG. Every gate check composited that over white, but the aesthetic scorer and the judge took the raw
PNG, and an image model that drops alpha sees black where the gate saw white paper: one sketch, two pictures. Here
it becomes one: what a viewer of the render's page saw (the frame's background is white, PAPER), composited once,
so the gate, the scorers, the gallery and the store all hold the same opaque image. A picture that is already opaque
(every seed-pool painting calls `background()`) keeps its bytes.
"""

from __future__ import annotations

import io

from PIL import Image


PAPER = (255, 255, 255)


def on_paper(png: bytes) -> bytes:
    """`png` composited over PAPER, as an RGB PNG; the same bytes when no pixel is transparent."""
    image = Image.open(io.BytesIO(png))
    if image.mode == "RGB" or (image.mode == "RGBA" and image.getchannel("A").getextrema()[0] == 255):
        return png
    sheet = Image.new("RGBA", image.size, (*PAPER, 255))
    sheet.alpha_composite(image.convert("RGBA"))
    out = io.BytesIO()
    sheet.convert("RGB").save(out, "PNG")
    return out.getvalue()
