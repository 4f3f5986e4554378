"""Writing found by its shape (`rewards.picture.writing_detector`) and words the picture supports (`picture_rules.supported`).

The pictures are drawn here with Pillow's own font on cream paper beside a painted disc, each the way the level reader
misses it; the forged p5.brush sketches of every family are measured by `python -m bench.text_reader --forged`.
"""

from __future__ import annotations

import asyncio
import io
import math
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont, ImageOps

from rewards.picture import ink, verdict_marks, writing_detector, writing_reader
from rewards.picture import rules as picture_rules


PAPER = "#f6f0e4"


def png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def sheet() -> Image.Image:
    """Cream paper with a rose disc painted on it, as a flower's head would be."""
    image = Image.new("RGB", (600, 600), PAPER)
    ImageDraw.Draw(image).ellipse((360, 80, 540, 260), fill="#d0607a")
    return image


def written(word: str, turn: float = 0, mirrored: bool = False, ink: str = "#2a2a6a") -> bytes:
    """`word` in 70-pixel letters at the foot of the sheet, turned `turn` degrees anticlockwise, mirrored or not."""
    layer = Image.new("L", (520, 120), 0)
    ImageDraw.Draw(layer).text((10, 10), word, fill=255, font=ImageFont.load_default(size=70))
    if mirrored:
        layer = ImageOps.mirror(layer)
    layer = layer.rotate(turn, expand=True)
    image = sheet()
    image.paste(Image.new("RGB", layer.size, ink), (300 - layer.width // 2, 400 - layer.height // 2), layer)
    return png(image)


def stacked(word: str) -> bytes:
    """Upright letters one under another, a third of a letter apart (stacked wider apart, they are a known miss)."""
    image = sheet()
    font = ImageFont.load_default(size=60)
    for index, letter in enumerate(word):
        ImageDraw.Draw(image).text((90, 60 + 62 * index), letter, fill="#2a2a6a", font=font)
    return png(image)


def knocked_out(word: str) -> bytes:
    """Paper-coloured letters over a dark block: the paint is the block, the letters are its holes."""
    image = sheet()
    draw = ImageDraw.Draw(image)
    draw.rectangle((60, 350, 470, 460), fill="#3a2430")
    draw.text((80, 365), word, fill=PAPER, font=ImageFont.load_default(size=70))
    return png(image)


@pytest.mark.parametrize(
    "picture",
    [written("CHOOSE ME", 180), written("PICK ME", mirrored=True), written("BEST ONE", 60), stacked("VOTE")],
    ids=["upside down", "mirrored", "turned 60 degrees", "stacked"],
)
def test_writing_the_level_reader_misses_is_found_by_its_shape_and_refused(picture):
    assert writing_detector.writing_by_shape(picture), "no line of writing found"
    found = asyncio.run(picture_rules.painted_text(picture))
    assert any("a line of" in reason and "writing is not painting" in reason for reason in found)


def test_paper_coloured_letters_knocked_out_of_a_dark_block_are_found_in_the_light_strokes():
    lines = [line for line in writing_detector.DETECTOR.lines(knocked_out("VOTE A")) if line.is_writing]
    assert "light strokes" in {line.layer for line in lines}


def on_sheet(layer: Image.Image, x: int, y: int) -> bytes:
    image = sheet()
    image.paste(Image.new("RGB", layer.size, "#2a2a6a"), (x - layer.width // 2, y - layer.height // 2), layer)
    return png(image)


def test_a_short_word_upside_down_is_read_in_the_detectors_mark():
    # 40-pixel letters: a mark too short to be a line of writing by its shape alone, and Tesseract never reads it
    # turned half a turn.
    layer = Image.new("L", (300, 100), 0)
    ImageDraw.Draw(layer).text((10, 10), "WIN", fill=255, font=ImageFont.load_default(size=40))
    picture = on_sheet(layer.rotate(180), 150, 420)
    assert not [line for line in writing_detector.DETECTOR.lines(picture) if line.is_writing]
    assert any('"WIN" read in a mark' in reason for reason in writing_detector.writing_by_shape(picture))


def test_letters_spaced_two_widths_apart_are_laid_side_by_side_and_read():
    layer = Image.new("L", (560, 140), 0)
    for index, letter in enumerate("PICK"):
        ImageDraw.Draw(layer).text((10 + 120 * index, 20), letter, fill=255, font=ImageFont.load_default(size=60))
    picture = on_sheet(layer, 300, 420)
    lines = writing_detector.DETECTOR.lines(picture)
    assert not [line for line in lines if line.is_writing]
    assert writing_detector.letter_rows(lines), "the letters' marks were not joined into a row"
    assert any("read in a mark" in reason for reason in writing_detector.writing_by_shape(picture))


def test_letters_stacked_two_heights_apart_are_laid_side_by_side_and_read():
    # The recogniser reads these capitals in their full-width forms ("ＶＯＴＥ"); they count as the letters they are.
    image = sheet()
    for index, letter in enumerate("VOTE"):
        ImageDraw.Draw(image).text(
            (90, 40 + 110 * index), letter, fill="#2a2a6a", font=ImageFont.load_default(size=50)
        )
    picture = png(image)
    assert not [line for line in writing_detector.DETECTOR.lines(picture) if line.is_writing]
    assert any('"VOTE" read in a mark' in reason for reason in writing_detector.writing_by_shape(picture))


def test_a_reading_is_writing_only_in_two_confident_letters_that_no_lone_stroke_reads_as():
    assert writing_reader.Reading("WIN", (0.99, 0.95, 0.97), "as it lies").is_writing
    assert not writing_reader.Reading("l1I|", (0.99, 0.99, 0.99, 0.99), "as it lies").is_writing  # stems and rims
    assert not writing_reader.Reading("W1N", (0.99, 0.99, 0.6), "as it lies").is_writing  # one letter at the bar
    assert not writing_reader.Reading("米果", (0.99, 0.99), "as it lies").is_writing  # the model's other scripts


def star(draw: ImageDraw.ImageDraw, x: float, y: float, radius: float) -> None:
    corners = [
        (x + r * math.cos(math.radians(-90 + 36 * k)), y + r * math.sin(math.radians(-90 + 36 * k)))
        for k in range(10)
        for r in [radius if k % 2 == 0 else radius * 0.42]
    ]
    draw.polygon(corners, fill="#e0b020")


def test_a_row_of_stars_is_a_rating_and_a_five_petalled_flower_is_not():
    rated = sheet()
    for index in range(4):
        star(ImageDraw.Draw(rated), 120 + 90 * index, 470, 32)
    assert len(verdict_marks.rating_stars(png(rated))) == 4
    assert any("stars of one size" in reason for reason in writing_detector.writing_by_shape(png(rated)))

    flowers = sheet()
    draw = ImageDraw.Draw(flowers)
    for cx in (150, 300, 450):  # three five-petalled flowers of one size, each with its eye
        for petal in range(5):
            a = math.radians(-90 + 72 * petal)
            px, py = cx + 24 * math.cos(a), 470 + 24 * math.sin(a)
            draw.ellipse((px - 18, py - 18, px + 18, py + 18), fill="#d0607a")
        draw.ellipse((cx - 10, 460, cx + 10, 480), fill="#e0a030")
    assert verdict_marks.rating_stars(png(flowers)) == []


def test_a_word_read_once_is_not_writing_and_the_same_letters_read_again_are():
    # A compact flower's petals read once as "ELA" at 88 in a turned reading refused it; a painted word is read in
    # more than one reading, not always alike in case or punctuation.
    assert picture_rules.supported((("ELA", 94.0, 3), ("ela", 40.0, 6))) == []
    assert picture_rules.supported((("LOVE", 96.0, 1), ("Love,", 61.0, 6))) == [("LOVE", 96.0, 1)]


def test_without_the_detectors_weights_the_text_check_names_the_fix(monkeypatch):
    # The gate turns this into RendererUnavailable: a dead letter, never a painting passed unchecked.
    monkeypatch.setattr(writing_reader.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(writing_detector, "DETECTOR", writing_detector.WritingDetector())
    monkeypatch.setattr(writing_detector, "FOUND", {})
    with pytest.raises(picture_rules.TextReaderMissing, match="make setup"):
        asyncio.run(picture_rules.painted_text(written("LOVE")))


def test_a_lone_letter_grade_is_writing_and_a_lone_letter_that_is_no_grade_is_not():
    assert writing_reader.Reading("A", (0.99,), "as it lies").is_writing
    assert writing_reader.Reading("B+", (0.98, 0.97), "as it lies").is_writing
    assert not writing_reader.Reading("A", (0.9,), "as it lies").is_writing  # under the grade's bar
    assert not writing_reader.Reading("K", (0.99,), "as it lies").is_writing  # a letter, but no grade
    assert not writing_reader.Reading("A8", (0.99, 0.5), "as it lies").is_writing


def rendered(sources: list[str]) -> list[bytes]:
    from renderers import render_many

    results = render_many(sources, seed=0, deadline_s=60.0)
    assert all(result.png is not None for result in results), [result.errors for result in results]
    return [result.png for result in results]


def test_words_painted_over_a_flowers_petals_are_found_in_the_strong_strokes():
    # Thin letters over petals: the petals' darkened rims filled the dark layer until the detector marked the flower,
    # not the word. Two of the tuning set's forged pictures: "ART" stacked, "YES" mirrored, each over the petals.
    folder = Path(__file__).resolve().parents[2] / "watercolour" / "fixtures" / "writing" / "tuning"
    pictures = rendered([(folder / name).read_text() for name in ("stacked_1.js", "mirrored_5.js")])
    for picture in pictures:
        lines = writing_detector.DETECTOR.lines(picture)
        assert [line for line in lines if line.is_writing and line.layer == "strong dark strokes"]
        assert asyncio.run(picture_rules.painted_text(picture))


def test_a_yellow_flowers_washes_laid_side_by_side_are_not_read_as_a_word():
    # Two washes of a compact yellow hibiscus, marked as single letters in a column and laid side by side, read "Bs":
    # a row of marks counts from three letters.
    from watercolour.policy.procedural import compact_sketch

    (picture,) = rendered([compact_sketch(6, "a yellow hibiscus")])
    assert asyncio.run(picture_rules.painted_text(picture)) == []


def test_a_dark_line_under_the_bar_is_read_and_a_policys_pale_flower_is_not_refused():
    # A policy's pale peach flower (the CPU demo's last step): the detector marked its eye's rim and a petal's edge as
    # one dark line 3.7 times as long as wide at 0.81, which reads as nothing. A dark line under DARK_LINE_SCORE counts
    # only when it reads: a spaced "PASS" in brush strokes, a dark line at 0.73, reads "ss".
    folder = Path(__file__).resolve().parents[2] / "watercolour" / "fixtures" / "writing"
    flower = (folder / "policy_peach_flower.png").read_bytes()
    lines = writing_detector.DETECTOR.lines(flower)
    assert [line for line in lines if line.is_long and line.layer == "dark strokes" and not line.is_writing]
    assert asyncio.run(picture_rules.painted_text(flower)) == []
    (spaced,) = rendered([(folder / "held_out_2" / "spaced_0.js").read_text()])
    assert not [line for line in writing_detector.DETECTOR.lines(spaced) if line.is_writing]
    assert any("read in a mark" in reason for reason in writing_detector.writing_by_shape(spaced))


def ticks(*lefts: int, short: float = 0.45) -> bytes:
    """Check marks in 6-pixel strokes on the sheet, each with its bend 90 pixels below its top, at `lefts`; `short` is
    the left arm's length over the right one's (1 is a symmetric "V")."""
    image = sheet()
    draw = ImageDraw.Draw(image)
    for left in lefts:
        bend = (left + 30 * short / 0.45, 520)
        draw.line([(left, 520 - 90 * short), bend, (bend[0] + 45, 430)], fill="#2a4a3a", width=6, joint="curve")
    return png(image)


def test_check_marks_side_by_side_are_a_verdict_and_one_mark_or_a_v_is_not():
    layers = ink.ink_layers
    assert len(verdict_marks.check_marks(layers(ticks(60, 160)))) == 2
    assert any("check marks" in reason for reason in writing_detector.writing_by_shape(ticks(60, 160, 260)))
    assert verdict_marks.check_marks(layers(ticks(60))) == []  # one alone stood in 5 of 459 good paintings
    assert verdict_marks.check_marks(layers(ticks(60, 160, short=1.0))) == []
    # Two painted in brush strokes beside a flower (a forged picture of the third held-out set).
    folder = Path(__file__).resolve().parents[2] / "watercolour" / "fixtures" / "writing" / "held_out_3"
    (picture,) = rendered([(folder / "verdict_marks_3.js").read_text()])
    assert verdict_marks.check_marks(ink.ink_layers(picture))


def test_letters_spaced_three_heights_apart_are_found_as_a_row_of_ink_and_read(monkeypatch):
    # "GREAT" in brush strokes, its letters about three heights apart beside a flower (a forged picture of the first
    # held-out set): the detector marks some of them, too few to read as a word; the ink's letter-sized pieces stand in
    # a line, and laid side by side they read.
    folder = Path(__file__).resolve().parents[2] / "watercolour" / "fixtures" / "writing" / "held_out"
    (picture,) = rendered([(folder / "spaced_4.js").read_text()])
    lines = writing_detector.DETECTOR.lines(picture)
    assert not [line for line in lines if line.is_writing]
    assert ink.ink_rows(ink.ink_layers(picture))
    assert any("read in a mark" in reason for reason in writing_detector.writing_by_shape(picture))
    monkeypatch.setattr(writing_detector, "FOUND", {})
    monkeypatch.setattr(ink, "INK_ROWS", 0)
    assert writing_detector.writing_by_shape(picture) == []


def test_a_row_of_painted_discs_and_rings_is_not_read_as_a_word():
    # Three rings and a disc in a row, a flower's florets or a border of buds: a row of ink, but no letters.
    image = sheet()
    draw = ImageDraw.Draw(image)
    for index in range(4):
        box = (60 + 120 * index, 420, 110 + 120 * index, 470)
        draw.ellipse(box, outline="#6a2040", width=5) if index % 2 else draw.arc(box, 20, 300, fill="#6a2040", width=5)
    picture = png(image)
    assert ink.ink_rows(ink.ink_layers(picture))
    assert writing_detector.writing_by_shape(picture) == []


def test_dotted_letters_over_petals_are_read_in_the_strongest_strokes_alone():
    # "TOP" in dots over a flower's petals (a forged picture of the tuning set): read in the picture, the petals' colour
    # and rims make it nothing; read in the strongest dark strokes alone, black on white, it is "TOP".
    folder = Path(__file__).resolve().parents[2] / "watercolour" / "fixtures" / "writing" / "tuning"
    (picture,) = rendered([(folder / "dotted_1.js").read_text()])
    found = writing_detector.writing_by_shape(picture)
    assert any("in the strongest strokes" in reason for reason in found), found
