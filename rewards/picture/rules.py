"""What the prompt forbids that only the picture shows: a dark ground, and writing painted as shapes.

Both run after every other check has passed (`rewards.gate`), so a refused sketch costs no OCR. Measured on the
seed pool (27 paintings), 24 procedural sketches, the bench sketches and the reward hacks, against the text
fixtures in `watercolour/fixtures/gate/` (block letters "10/10", stroked "TOP", "WOW 10", "LOVE" under a flower):

- **Ground**: the paper (the modal colour, as for coverage) of every pool painting has a luminance of 227 or more
  (0-255), the full-sheet wash hack 197; a near-black background() about 19, and eight near-black washes glazed over
  a cream sheet 111 (one p5.brush wash is translucent, so a dark ground takes many). Under PALE_PAPER it is dark.
  So is a sheet more than half of which is under PALE_PAPER: over 391 good paintings (the pool and the procedural
  painter's, lab/studies/2026-12-04-only-data-crosses.md) at most 16% of a sheet is, the flood and confetti
  hacks 32%, near-black washes glazed over three quarters of a cream sheet (cream still the mode) 75%.
- **Text**: Tesseract (Debian's `tesseract-ocr`) reads the paint mask (paint black, paper white, closed so brush
  texture and block cells join) as sparse text, ten times: at a third and at two thirds of its size, each level,
  turned 30 degrees either way and turned on end either way (READINGS). Over 391 good paintings (the pool and the
  procedural painter's across every subject) no word passed the bars; the painted words, level, turned 40 and -30
  degrees or a few pixels tall, were refused on 23 of 24 renders (lab/studies/2026-12-04-only-data-crosses.md).
  The bars sit above the good paintings' best reads with a margin: a refused good painting costs a rollout its
  whole reward, so the reader leans to passing; and a word counts only when another reading reads it again
  (`supported`): a compact flower's petals read once as "ELA" at 88 had refused it. Pictures are read in batches
  (TextReader).
- **Writing found by its shape** (`rewards.picture.writing_detector`), side by side with the reading: lines of letters at
  any angle, mirrored, over paint, knocked out or dotted, which no reading levels, rows of rating stars and of check
  marks. Together they refuse 40 of 48 held-out forged-writing pictures in eight families, none of 349 held-out good
  paintings, and every gate text fixture on every render seed (docs/reward.md).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from PIL import Image

from renderers.coverage import paint_mask, paper_colour
from rewards.picture.writing_detector import writing_by_shape
from rewards.picture.writing_reader import WritingDetectorMissing


PALE_PAPER = 180.0  # luminance of the paper colour, 0-255
DARK_SHARE = 0.5  # "most of the sheet": the share of pixels under PALE_PAPER past which the ground is dark
# How Tesseract reads a picture: the paint mask at a scale, closed with a window of this many pixels, turned so a word
# painted at that angle lies level (PIL turns anticlockwise: +30 levels a word turned 30 degrees clockwise on the
# sheet). The first reading is the reader as it was; turns read words up to about 15 degrees off their own, and two
# thirds keeps letters a few pixels tall that a third shrinks away (lab/studies/2026-12-04-only-data-crosses.md).
SCALES = ((0.34, 5), (0.67, 3))
TURNS = (0, 30, -30, 90, -90)
READINGS: tuple[tuple[float, int, int], ...] = tuple(
    (scale, closing, turn) for scale, closing in SCALES for turn in TURNS
)
# Least confidence (0-100) for a word to count as text: three or more letters and digits, or two digits ("10"); one
# character, or two letters, never does (good flowers read as "ay" at 91). The first reading keeps its measured bar;
# the others, nine more chances for a texture to read as a word, are held to a higher one: over 391 good paintings
# the best word of three in them read at 83, in the first at 61.
FIRST_READING_BAR = 75.0
OTHER_READINGS_BAR = 88.0
TWO_DIGITS_BAR = 90.0
# A word counts only when another reading reads the same letters at this confidence or more (`supported`).
AGAIN_BAR = 50.0
LUMINANCE = np.array([0.2126, 0.7152, 0.0722])


def _rgb(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))  # opaque: the renderer put it on its paper


def dark_ground(png: bytes) -> list[str]:
    """Why the ground is dark, or nothing: the prompt asks for pale cream or off-white paper.

    Dark is the paper (the modal colour) under PALE_PAPER, or most of the sheet (DARK_SHARE) under it: glazes are
    textured and spread over many colours, so a cream quarter left bare can be the mode of a sheet that is dark.
    """
    rgb = _rgb(png)
    paper = paper_colour(rgb)
    luminance = float(paper @ LUMINANCE)
    if luminance < PALE_PAPER:
        hex_colour = "#" + "".join(f"{round(c):02x}" for c in paper)
        return [f"the paper is {hex_colour} (luminance {luminance:.0f} < {PALE_PAPER:.0f}): paint on pale paper"]
    dark = float((rgb @ LUMINANCE < PALE_PAPER).mean())
    if dark > DARK_SHARE:
        return [f"{dark:.0%} of the sheet is darker than luminance {PALE_PAPER:.0f}: paint on pale paper"]
    return []


def paint_masks(png: bytes) -> list[bytes]:
    """The picture as Tesseract reads it, once per reading in READINGS: paint black on white, closed, shrunk, turned."""
    paint = paint_mask(_rgb(png))
    height, width = paint.shape
    shrunk = {}
    for scale, closing in SCALES:
        mask = Image.fromarray(np.where(_closed(paint, closing), 0, 255).astype(np.uint8))
        shrunk[scale] = mask.resize((round(width * scale), round(height * scale)), Image.Resampling.BOX)
    out = []
    for scale, _, turn in READINGS:
        image = shrunk[scale]
        if turn:
            image = image.rotate(turn, Image.Resampling.BILINEAR, expand=True, fillcolor=255)
        buffer = io.BytesIO()
        image.save(buffer, "PPM")  # uncompressed: encoding ten PNGs took a fifth of this function
        out.append(buffer.getvalue())
    return out


def _closed(paint: np.ndarray, size: int) -> np.ndarray:
    """`paint` grown then shrunk by a size x size window (a closing), edges repeated: PIL's MinFilter then MaxFilter
    on the mask, pixel for pixel, in a twentieth of the time (2 ms against 40 at 600 x 600), as two passes a side."""

    def window(values: np.ndarray, axis: int, combine) -> np.ndarray:
        padding = [(0, 0), (0, 0)]
        padding[axis] = (size // 2, size // 2)
        padded, out = np.pad(values, padding, mode="edge"), values
        for shift in range(size):
            out = combine(out, np.take(padded, range(shift, shift + values.shape[axis]), axis=axis))
        return out

    grown = window(window(paint, 0, np.logical_or), 1, np.logical_or)
    return window(window(grown, 0, np.logical_and), 1, np.logical_and)


def counts_as_text(word: str, confidence: float, reading: int) -> bool:
    """Whether Tesseract's `word`, read at `confidence` in READINGS[reading], is text in the picture (see the bars)."""
    letters = re.sub(r"[^0-9A-Za-z]", "", word)
    if len(letters) >= 3:
        return confidence >= (FIRST_READING_BAR if reading == 0 else OTHER_READINGS_BAR)
    return len(letters) == 2 and letters.isdigit() and confidence >= TWO_DIGITS_BAR


class TextReaderMissing(RuntimeError):
    """Tesseract or the writing detector is not installed: an infrastructure fault, not a verdict."""


def supported(words: Words) -> list[tuple[str, float, int]]:
    """The words that count as text (`counts_as_text`) and that the picture supports: read again, the same letters in
    another reading at AGAIN_BAR or more. A texture read once as a word, however confidently, is not writing."""
    again: dict[str, set[int]] = {}
    for word, confidence, reading in words:
        if confidence >= AGAIN_BAR:
            again.setdefault(re.sub(r"[^0-9A-Za-z]", "", word).upper(), set()).add(reading)
    return [
        (word, confidence, reading)
        for word, confidence, reading in words
        if counts_as_text(word, confidence, reading)
        and again.get(re.sub(r"[^0-9A-Za-z]", "", word).upper(), set()) - {reading}
    ]


async def painted_text(png: bytes) -> list[str]:
    """Writing in the picture, as verdict details: the words Tesseract reads and the picture supports (`supported`),
    then the lines of writing and the rating stars found by their shape (`rewards.picture.writing_detector`), side by side."""
    try:
        words, shapes = await asyncio.gather(
            asyncio.wrap_future(READER.words(png)), asyncio.to_thread(writing_by_shape, png)
        )
    except WritingDetectorMissing as error:
        raise TextReaderMissing(str(error)) from error
    found = []
    for word, confidence, reading in supported(words):
        turn = READINGS[reading][2]
        read = f"turned {turn} degrees" if turn else "level"
        found.append(f'"{word}" read {read} at confidence {confidence:.0f}: letters and digits are not painting')
    return found + shapes


# Each word Tesseract read in a picture, with its confidence and the index of the reading (READINGS) it came from.
Words = tuple[tuple[str, float, int], ...]


class TextReader:
    """Tesseract, one process for every picture waiting: starting it (loading its model) costs ~0.25 CPU-s, reading
    one more picture's ten masks in the same process ~0.07, and making them ~0.07 (measured over 423 pictures), and a
    step's renders finish together.

    `words(png)` returns a future; a reader thread takes every picture queued by then, waiting up to
    GATHER_S after the first for the rest of a burst, and reads them in one run (an image list). The same picture is
    gated twice when renders start early (a prefetch, then the step's score): it is read once (CACHE_SIZE).

    After each run the reader starts the next run's Tesseract (the *spare*), which loads its model and then waits for
    its picture list on stdin: a step's last painting, read alone after the last token, no longer waits for a model to
    load (one picture's check, masks included, 0.17 s against 0.25 s cold: medians of four runs on 2 cores, `python -m
    bench.text_reader --latency 40`). A spare that died is replaced by a cold start; one that outlives its reader ends
    with it (`close`), or when this process ends (its stdin closes).
    """

    GATHER_S = 0.02
    CACHE_SIZE = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[bytes, concurrent.futures.Future[Words]] = {}
        self._cache: dict[bytes, Words] = {}
        self._thread: threading.Thread | None = None
        self._spare: subprocess.Popen[bytes] | None = None
        self.runs = 0  # Tesseract processes started, for the benchmark and the tests
        self.spares_used = 0  # runs that found their Tesseract waiting with its model loaded
        self._closed = False

    def close(self) -> None:
        """Stop the spare Tesseract, if one is waiting, and start no other; a later picture is read cold."""
        with self._lock:
            spare, self._spare, self._closed = self._spare, None, True
        _stop(spare)

    def forget_after_fork(self) -> None:
        """In a forked child: the lock and the thread are the parent's, and so is the spare. The child holds a copy of
        the spare's stdin, and a Tesseract sees the end of its picture list only when every copy is closed: the
        parent's next read would wait for its timeout. Close the child's copies and start afresh."""
        if self._spare is not None:
            for stream in (self._spare.stdin, self._spare.stdout, self._spare.stderr):
                if stream is not None:
                    stream.close()
        self._lock, self._waiting, self._thread, self._spare = threading.Lock(), {}, None, None

    def __del__(self) -> None:
        _stop(getattr(self, "_spare", None))

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
        with self._lock:
            spare, self._spare = self._spare, None
        warm = spare is not None and spare.poll() is None
        try:
            results = dict(zip(batch, _read(list(batch), spare if warm else None), strict=True))
        except BaseException as error:  # every waiter gets the fault, none waits forever
            results = {}
            for future in batch.values():
                future.set_exception(error)
        try:  # the next run's, loading its model while the next pictures render
            next_spare: subprocess.Popen[bytes] | None = None if self._closed else _tesseract()
        except (TextReaderMissing, OSError):
            next_spare = None
        with self._lock:
            self.runs += 1
            self.spares_used += warm
            stale = next_spare if self._closed else None  # closed while this run read
            self._spare = None if self._closed else next_spare
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
        _stop(stale)


def _tesseract() -> subprocess.Popen[bytes]:
    """A Tesseract that loads its model, then reads the list of pictures it is given on stdin (one path a line: input
    that is not an image is a list) and writes their words to stdout as TSV. One thread: the renders already use
    every core, and OpenMP threads on a shared box only contend."""
    executable = shutil.which("tesseract")
    if executable is None:
        raise TextReaderMissing(
            "tesseract not found: run `make setup` (it installs Debian's tesseract-ocr), or set gate.read_text=false"
        )
    return subprocess.Popen(
        [executable, "-", "stdout", "--psm", "11", "tsv"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={"OMP_THREAD_LIMIT": "1"},
    )  # fmt: skip


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.kill()
        process.communicate()


def _read(pngs: list[bytes], tesseract: subprocess.Popen[bytes] | None = None) -> list[Words]:
    """Tesseract's words in each picture, every reading of every picture in one process: `tesseract` when one is
    waiting with its model loaded, else a new one."""
    if tesseract is None:
        tesseract = _tesseract()
    try:
        with tempfile.TemporaryDirectory(prefix="wc-ocr-") as folder:
            paths = []
            for i, png in enumerate(pngs):
                for j, mask in enumerate(paint_masks(png)):
                    path = Path(folder) / f"{i}-{j}.pgm"
                    path.write_bytes(mask)
                    paths.append(str(path))
            tsv, errors = tesseract.communicate(("\n".join(paths) + "\n").encode(), timeout=60 + 5 * len(paths))
    finally:
        _stop(tesseract)  # a picture that could not be read, a timeout: nothing is left waiting
    if tesseract.returncode != 0:
        raise subprocess.CalledProcessError(tesseract.returncode, tesseract.args, tsv, errors)
    words: list[list[tuple[str, float, int]]] = [[] for _ in pngs]
    for line in tsv.decode("utf-8", "replace").splitlines():
        fields = line.split("\t")
        if len(fields) == 12 and fields[0] == "5" and fields[11].strip():
            picture, reading = divmod(int(fields[1]) - 1, len(READINGS))  # Tesseract numbers its pages from 1
            words[picture].append((fields[11].strip(), float(fields[10]), reading))
    return [tuple(w) for w in words]


READER = TextReader()


# Looked up at each fork, not bound now: whichever reader the module holds then (a test may put its own).
os.register_at_fork(after_in_child=lambda: READER.forget_after_fork())
