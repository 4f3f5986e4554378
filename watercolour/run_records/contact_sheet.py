"""A contact sheet: one step's paintings as small tiles in one PNG, small enough to embed in a Prefect artifact.

The Prefect UI shows artifacts from its own database and cannot open a file on the machine that trained (a
`file://` link in an artifact is refused by the browser), so a step's paintings travel inside the artifact as a
data URL: 16 tiles of 128 px came to about 100 kB.
"""

from __future__ import annotations

import base64
import io
import math

from PIL import Image, ImageDraw


TILE = 128
PAPER = (246, 240, 228)


def contact_sheet(paintings: list[tuple[str, bytes | None]], columns: int = 4, tile: int = TILE) -> bytes:
    """PNG bytes: each (label, png) as a tile with its label; a painting that was never rendered is a blank tile."""
    rows = max(1, math.ceil(len(paintings) / columns))
    sheet = Image.new("RGB", (columns * tile, rows * (tile + 16)), "white")
    draw = ImageDraw.Draw(sheet)
    for index, (label, png) in enumerate(paintings):
        x, y = (index % columns) * tile, (index // columns) * (tile + 16)
        if png is not None:
            picture = Image.open(io.BytesIO(png)).convert("RGB")
            picture.thumbnail((tile, tile))
            sheet.paste(picture, (x, y))
        else:
            draw.rectangle((x + 4, y + 4, x + tile - 5, y + tile - 5), fill=PAPER)
            draw.text((x + 8, y + tile // 2 - 6), "not rendered", fill=(120, 110, 100))
        draw.text((x + 4, y + tile + 2), label, fill=(40, 40, 40))
    out = io.BytesIO()
    sheet.save(out, format="PNG", optimize=True)
    return out.getvalue()


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
