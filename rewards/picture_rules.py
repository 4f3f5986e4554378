"""What the prompt forbids that only the picture shows: a dark ground, and letters or digits painted as shapes.

Both run after every other check has passed (`rewards.gate`), so a refused sketch costs no OCR. Measured on the
seed pool (27 paintings), 24 procedural sketches, the bench sketches and the reward hacks, against the text
fixtures in `watercolour/fixtures/gate/` (block letters "10/10", stroked "TOP", "WOW 10", "LOVE" under a flower):

- **Ground**: the paper (the modal colour, as for coverage) of every pool painting has a luminance of 227 or more
  (0-255), the full-sheet wash hack 197; a near-black background() about 19, and eight near-black washes glazed over
  a cream sheet 111 (one p5.brush wash is translucent, so a dark ground takes many). Under PALE_PAPER it is dark.
- **Text**: Tesseract (Debian's `tesseract-ocr`) reads the paint mask (paint black, paper white, closed with a
  5 px window so brush texture and block cells join, shrunk to a third), as sparse text. Over four render seeds
  (docs/experiments/2026-12-02-sandbox.md, "Over four seeds"), 264 paintings that hold no text (pool, procedural,
  bench, passing gate fixtures, the tests' flower) gave no word of three letters or digits above 64 and no word of
  two above 84, while the stroked and painted words ("TOP", "WOW 10", "LOVE") were refused on 11 of their 12
  renders (one "TOP" read at 74). The bars (MIN_CONFIDENCE) sit above the negatives with a margin: a refused good
  painting costs a rollout its whole reward, so the reader leans to passing. Block letters built from squares
  ("10/10") read at 61 at best and pass: a known miss. One read costs ~0.1 CPU-s.
"""

from __future__ import annotations

import asyncio
import functools
import io
import re
import shutil
import subprocess

import numpy as np
from PIL import Image, ImageFilter

from renderers.coverage import PAINT_THRESHOLD, paper_colour


PALE_PAPER = 180.0  # luminance of the paper colour, 0-255
OCR_SCALE = 0.34
OCR_CLOSING = 5
# Least confidence (0-100) for a word of this many letters and digits to count as text; one character never does.
MIN_CONFIDENCE = {2: 90.0, 3: 75.0}
LUMINANCE = np.array([0.2126, 0.7152, 0.0722])


def _rgb(png: bytes) -> np.ndarray:
    image = Image.open(io.BytesIO(png)).convert("RGBA")
    canvas = Image.new("RGBA", image.size, (255, 255, 255, 255))
    canvas.alpha_composite(image)
    return np.asarray(canvas.convert("RGB"))


def dark_ground(png: bytes) -> list[str]:
    """Why the ground is dark, or nothing: the prompt asks for pale cream or off-white paper."""
    paper = paper_colour(_rgb(png))
    luminance = float(paper @ LUMINANCE)
    if luminance >= PALE_PAPER:
        return []
    hex_colour = "#" + "".join(f"{round(c):02x}" for c in paper)
    return [f"the paper is {hex_colour} (luminance {luminance:.0f} < {PALE_PAPER:.0f}): paint on pale paper"]


def paint_mask(png: bytes) -> bytes:
    """The picture as Tesseract reads it best: paint black on white, texture closed, shrunk; a PNG."""
    rgb = _rgb(png).astype(np.int16)
    paint = np.abs(rgb - paper_colour(rgb.astype(np.uint8))).max(axis=-1) > PAINT_THRESHOLD
    mask = Image.fromarray(np.where(paint, 0, 255).astype(np.uint8))
    mask = mask.filter(ImageFilter.MinFilter(OCR_CLOSING)).filter(ImageFilter.MaxFilter(OCR_CLOSING))
    mask = mask.resize((round(mask.width * OCR_SCALE), round(mask.height * OCR_SCALE)), Image.Resampling.BOX)
    out = io.BytesIO()
    mask.save(out, "PNG")
    return out.getvalue()


class TextReaderMissing(RuntimeError):
    """Tesseract is not installed: an infrastructure fault, not a verdict."""


async def painted_text(png: bytes) -> list[str]:
    """The words Tesseract reads in the picture with enough confidence (see MIN_CONFIDENCE), as verdict details."""
    words = await asyncio.to_thread(_words, png)
    found = []
    for word, confidence in words:
        length = len(re.sub(r"[^0-9A-Za-z]", "", word))
        if length >= 2 and confidence >= MIN_CONFIDENCE[min(length, 3)]:
            found.append(f'"{word}" read at confidence {confidence:.0f}: letters and digits are not painting')
    return found


# The same picture is gated twice when renders start early (a prefetch, then the step's score): read it once.
@functools.lru_cache(maxsize=256)
def _words(png: bytes) -> tuple[tuple[str, float], ...]:
    executable = shutil.which("tesseract")
    if executable is None:
        raise TextReaderMissing(
            "tesseract not found: run `make setup` (it installs Debian's tesseract-ocr), or set gate.read_text=false"
        )
    # One thread: the renders already use every core, and OpenMP threads on a shared box only contend.
    tsv = subprocess.run(
        [executable, "stdin", "stdout", "--psm", "11", "tsv"],
        input=paint_mask(png), capture_output=True, check=True, timeout=60, env={"OMP_THREAD_LIMIT": "1"},
    ).stdout  # fmt: skip
    words = []
    for line in tsv.decode("utf-8", "replace").splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) == 12 and fields[11].strip():
            words.append((fields[11].strip(), float(fields[10])))
    return tuple(words)
