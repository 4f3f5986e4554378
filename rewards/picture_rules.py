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
  ("10/10") read at 61 at best and pass: a known miss. Pictures are read in batches (TextReader).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

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
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))  # opaque: the renderer put it on its paper


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
    words = await asyncio.wrap_future(READER.words(png))
    found = []
    for word, confidence in words:
        length = len(re.sub(r"[^0-9A-Za-z]", "", word))
        if length >= 2 and confidence >= MIN_CONFIDENCE[min(length, 3)]:
            found.append(f'"{word}" read at confidence {confidence:.0f}: letters and digits are not painting')
    return found


Words = tuple[tuple[str, float], ...]


class TextReader:
    """Tesseract, one process for every picture waiting: starting it (loading its model) costs ~0.25 CPU-s, reading
    one more picture in the same process ~0.015 (bench/text_reader.py), and a step's renders finish together.

    `words(png)` returns a future; a reader thread takes every picture queued by then, waiting up to
    GATHER_S after the first for the rest of a burst, and reads them in one run (an image list). The same picture is
    gated twice when renders start early (a prefetch, then the step's score): it is read once (CACHE_SIZE).
    """

    GATHER_S = 0.02
    CACHE_SIZE = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[bytes, concurrent.futures.Future[Words]] = {}
        self._cache: dict[bytes, Words] = {}
        self._thread: threading.Thread | None = None
        self.runs = 0  # Tesseract processes started, for the benchmark and the tests

    def words(self, png: bytes) -> concurrent.futures.Future[Words]:
        with self._lock:
            future: concurrent.futures.Future[Words] = concurrent.futures.Future()
            if png in self._cache:
                future.set_result(self._cache[png])
                return future
            if png in self._waiting:
                return self._waiting[png]
            self._waiting[png] = future
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="text-reader", daemon=True)
                self._thread.start()
            return future

    def _serve(self) -> None:
        time.sleep(self.GATHER_S)
        with self._lock:
            batch, self._waiting = self._waiting, {}
            self._thread = None if not batch else self._thread
        if not batch:
            return
        try:
            results = dict(zip(batch, _read(list(batch)), strict=True))
        except BaseException as error:  # every waiter gets the fault, none waits forever
            results = {}
            for future in batch.values():
                future.set_exception(error)
        with self._lock:
            self.runs += 1
            for png, words in results.items():
                self._cache[png] = words
                batch[png].set_result(words)
            while len(self._cache) > self.CACHE_SIZE:
                del self._cache[next(iter(self._cache))]
            if self._waiting:  # queued while this batch was read: the next run takes them
                self._thread = threading.Thread(target=self._serve, name="text-reader", daemon=True)
                self._thread.start()
            else:
                self._thread = None


def _read(pngs: list[bytes]) -> list[Words]:
    """Tesseract's words in each picture, one process for all of them."""
    executable = shutil.which("tesseract")
    if executable is None:
        raise TextReaderMissing(
            "tesseract not found: run `make setup` (it installs Debian's tesseract-ocr), or set gate.read_text=false"
        )
    with tempfile.TemporaryDirectory(prefix="wc-ocr-") as folder:
        paths = []
        for i, png in enumerate(pngs):
            path = Path(folder) / f"{i}.png"
            path.write_bytes(paint_mask(png))
            paths.append(str(path))
        listing = Path(folder) / "pictures.txt"
        listing.write_text("\n".join(paths) + "\n")
        # One thread: the renders already use every core, and OpenMP threads on a shared box only contend.
        tsv = subprocess.run(
            [executable, str(listing), "stdout", "--psm", "11", "tsv"],
            capture_output=True, check=True, timeout=60 + 5 * len(pngs), env={"OMP_THREAD_LIMIT": "1"},
        ).stdout  # fmt: skip
    words: list[list[tuple[str, float]]] = [[] for _ in pngs]
    for line in tsv.decode("utf-8", "replace").splitlines():
        fields = line.split("\t")
        if len(fields) == 12 and fields[0] == "5" and fields[11].strip():
            words[int(fields[1]) - 1].append((fields[11].strip(), float(fields[10])))
    return [tuple(w) for w in words]


READER = TextReader()


def _words(png: bytes) -> Words:
    """The words of one picture, read now (blocking): for tools that read pictures one by one."""
    return READER.words(png).result()
