"""Reading what the writing detector marks: a candidate region of the picture read as letters, at the turns it may lie.

The detector (`rewards.picture.writing_detector`) marks where text may be; a long, narrow mark is writing by its shape alone.
What it marks short or round is often writing too (a word over a flower's eye merges with it; a word upside down or
mirrored is marked in pieces; letters spaced or stacked apart are marked one by one), but so is a flower's eye. This
module decides those by reading them, the way a judge would: PP-OCRv4's recogniser, the second model inside the
`rapidocr-onnxruntime` wheel (its alphabet is in the model's metadata; nothing is fetched at run time), reads each
region cut out of the picture and levelled along the mark, as it lies, turned half a turn and mirrored both ways (a
round mark is also read turned a quarter turn either way, its direction unknown). Single letters in a row or a column
are cut out one by one, laid side by side and read as one word (`chain_image`).

A reading is writing when it holds READ_LETTERS letters or digits each read at READ_BAR or more, not counting the
characters any lone stroke reads as (a stem is an "l", a rim a "1"). Measured on the tuning sets (study linked from
docs/reward.md): no good painting's region reached two such letters, in any turn.
"""

from __future__ import annotations

import importlib.util
import math
import re
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps


class WritingDetectorMissing(RuntimeError):
    """onnxruntime or the detector's weights are not installed: an infrastructure fault, not a verdict."""


def onnx_session(model: str):
    """An ONNX session of one of the models the rapidocr-onnxruntime wheel ships (found, not imported: importing the
    package imports OpenCV), on one thread: the renders already use every core, and a pool's threads only contend on a
    shared box."""
    try:
        import onnxruntime
    except ImportError as error:
        raise WritingDetectorMissing(
            "onnxruntime is not installed: run `make setup`, or set gate.read_text=false"
        ) from error
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        raise WritingDetectorMissing(
            "the text detector's weights (the rapidocr-onnxruntime wheel) are not installed: run `make setup`, or set "
            "gate.read_text=false"
        )
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    path = Path(spec.submodule_search_locations[0]) / "models" / model
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


# Least probability for a character to count, and how many such letters or digits make a reading writing.
READ_BAR = 0.9
READ_LETTERS = 2
# What a lone straight or curved stroke reads as, at any confidence: never counted.
STROKE_LIKE = frozenset("1lIi|")
# A grade is a verdict a judge reads in one letter: a mark read as nothing but a letter grade ("A", "B+", "C-"), every
# character at GRADE_BAR or more, is writing too.
GRADE = re.compile(r"[A-F][+\-]?")
GRADE_BAR = 0.95
READ_HEIGHT = 48  # the recogniser's input height, its training size
READ_WIDTH_MAX = 640  # a wider crop is squeezed to this: the longest forged word read fits in 400


@dataclass(frozen=True)
class Reading:
    """What the recogniser read in one view of a region: its characters, each one's probability, and the view."""

    text: str
    confidences: tuple[float, ...]
    view: str

    @property
    def letters(self) -> str:
        """The letters and digits read confidently enough to count (READ_BAR), strokes (STROKE_LIKE) left out."""
        return "".join(
            c
            for c, p in zip(self.text, self.confidences, strict=True)
            if c.isascii() and c.isalnum() and c not in STROKE_LIKE and p >= READ_BAR
        )

    @property
    def is_grade(self) -> bool:
        return GRADE.fullmatch(self.text) is not None and min(self.confidences) >= GRADE_BAR

    @property
    def is_writing(self) -> bool:
        return len(self.letters) >= READ_LETTERS or self.is_grade


def views(crop: np.ndarray, quarter_turns: bool) -> dict[str, np.ndarray]:
    """A levelled crop as it lies, turned half a turn, mirrored left to right and top to bottom; and each of those
    turned a quarter turn too when the region is round (the writing in it may run either way)."""
    image = Image.fromarray(crop)
    out = {
        "as it lies": image,
        "turned half a turn": image.rotate(180),
        "mirrored": ImageOps.mirror(image),
        "mirrored top to bottom": ImageOps.flip(image),
    }
    if quarter_turns:
        for name, view in list(out.items()):
            out[f"{name}, on end"] = view.rotate(90, expand=True)
    return {name: np.asarray(view) for name, view in out.items()}


def levelled(grey: np.ndarray, x: float, y: float, angle: float, along: float, across: float) -> np.ndarray:
    """The `along` x `across` box centred on (x, y) of `grey`, turned by `angle` degrees so that its long side lies
    level (PIL turns anticlockwise; a mark running down to the right at `angle` comes out level)."""
    # Only the window the box can turn within is turned (turning the whole picture once a letter cost ~2 ms). Its
    # corner is at even pixels, so the box's rounding, and so the crop, is the same as in the whole picture.
    reach = math.ceil(math.hypot(along, across) / 2) + 2
    left0, top0 = 2 * math.floor((x - reach) / 2), 2 * math.floor((y - reach) / 2)
    size = 2 * reach + 4
    window = np.full((size, size), 255, np.uint8)
    rows = slice(max(top0, 0), min(top0 + size, grey.shape[0]))
    columns = slice(max(left0, 0), min(left0 + size, grey.shape[1]))
    window[rows.start - top0 : rows.stop - top0, columns.start - left0 : columns.stop - left0] = grey[rows, columns]
    x, y = x - left0, y - top0
    image = Image.fromarray(window).rotate(angle, Image.Resampling.BILINEAR, center=(x, y), fillcolor=255)
    left, top = round(x - along / 2), round(y - across / 2)
    box = (left, top, left + round(along), top + round(across))
    return np.asarray(image.crop(box))


def chain_image(
    grey: np.ndarray,
    centres: list[tuple[float, float]],
    side: float,
    angle: float,
    mirrored: bool,
    column: bool = False,
) -> np.ndarray:
    """Letters cut out around `centres` (squares of `side`), each turned by `angle` degrees, laid side by side in the
    order they are read once turned: along the turned horizontal for a row, down the turned vertical for a `column`
    (letters stacked upright are read top to bottom). `mirrored`: each letter mirrored, and a row's order reversed."""
    radians = math.radians(angle + 90 if column else angle)
    order = sorted(centres, key=lambda c: c[0] * math.cos(radians) + c[1] * math.sin(radians))
    glyphs = [levelled(grey, x, y, angle, side, side) for x, y in order]
    if mirrored:
        glyphs = [glyph[:, ::-1] for glyph in (glyphs if column else reversed(glyphs))]
    gap = np.full((glyphs[0].shape[0], max(2, round(side * 0.15))), 255, np.uint8)
    return np.concatenate([gap] + [part for glyph in glyphs for part in (glyph, gap)], axis=1)


class Recogniser:
    """The recogniser's ONNX session and alphabet, loaded on first use and shared (onnxruntime's `run` is
    thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._session = None
        self._alphabet: list[str] = []

    def _load(self):
        with self._lock:
            if self._session is None:
                session = onnx_session("ch_PP-OCRv4_rec_infer.onnx")
                # CTC's blank first, then the characters the model was trained on, then a space. It reads Latin letters
                # and digits in their full-width forms ("ＶＯＴＥ") as often as in the narrow ones: each is taken as its
                # narrow form, so that a word counts whichever it came in.
                characters = ["", *session.get_modelmeta().custom_metadata_map["character"].splitlines(), " "]
                self._alphabet = [
                    narrow if len(narrow := unicodedata.normalize("NFKC", c)) == 1 else c for c in characters
                ]
                self._session = session
            return self._session

    def read(self, crops: dict[str, np.ndarray]) -> list[Reading]:
        """Each grey crop (dark writing on light, any size) read: greedy CTC decoding, a probability a character."""
        session = self._load()
        if not crops:
            return []
        widths = [min(READ_WIDTH_MAX, max(8, round(READ_HEIGHT * c.shape[1] / c.shape[0]))) for c in crops.values()]
        batch = np.zeros((len(crops), 3, READ_HEIGHT, max(widths)), np.float32)  # padding reads as blank
        for index, (crop, width) in enumerate(zip(crops.values(), widths, strict=True)):
            resized = Image.fromarray(crop).resize((width, READ_HEIGHT), Image.Resampling.BILINEAR)
            batch[index, :, :, :width] = np.asarray(resized, np.float32) / 127.5 - 1.0
        out = []
        for view, probabilities in zip(
            crops, session.run(None, {session.get_inputs()[0].name: batch})[0], strict=True
        ):
            best, confidence = probabilities.argmax(axis=1), probabilities.max(axis=1)
            text, confidences, previous = [], [], 0
            for index, p in zip(best, confidence, strict=True):
                if index and index != previous:
                    text.append(self._alphabet[index])
                    confidences.append(float(p))
                previous = index
            out.append(Reading("".join(text), tuple(confidences), view))
        return out


RECOGNISER = Recogniser()
