"""The offline stand-ins read the subject: a colour is named as a person names it, and a sketch in its subject's
palette beats the same sketch in a wrong one."""

from __future__ import annotations

import numpy as np
import pytest

from ground.palettes import NAMED_WASHES, PALETTES, WHITE_SHADOW
from ground.prompt import SUBJECTS
from ground.reference_pool import load_pool
from rewards.colour_words import word_gap
from rewards.judging.offline_judge import PoolSimilarityJudge
from rewards.judging.settings import JudgeSettings
from rewards.offline_aesthetic import ImageStatsScorer
from rewards.subject_match import neighbours, subject_colours, subject_match
from watercolour.policy.procedural import compact_sketch


def wrong_word(subject: str) -> str:
    """The colour word whose paint lies farthest from the subject's petals'."""
    petals = subject_colours(subject).petals
    return max(PALETTES, key=lambda word: word_gap(petals, word))


def repaint(sketch: str, subject: str, word: str) -> str:
    """The same sketch with every colour of the subject's palettes swapped for the same wash of `word`'s."""
    colours = subject_colours(subject)
    painted = sketch.replace(WHITE_SHADOW, PALETTES[word][2])
    for name in filter(None, (colours.petals, colours.heart)):
        for own, other in zip(PALETTES[name], PALETTES[word], strict=True):
            painted = painted.replace(own, other)
    assert painted != sketch, f"nothing of {subject!r}'s palette was in the sketch"
    return painted


def test_subjects_are_read_as_the_generator_reads_them():
    assert subject_colours("a white hibiscus with a crimson eye").petals == "white"
    assert subject_colours("a white hibiscus with a crimson eye").heart == "crimson"
    assert subject_colours("a sunflower").petals == "golden"  # no colour word: the flower's own colour
    assert subject_colours("a pale blue morning glory").flower == "morning glory"
    assert subject_colours("a coloured peach rose").petals == "peach"  # "red" inside "coloured" is not a word


def flower_png(petals: tuple[int, int, int], speck: tuple[int, int, int] | None = None) -> bytes:
    """A round flower of one colour on cream paper, a rose-red heart, and optionally one patch of `speck`
    (about 3% of the petals) on a petal."""
    import io

    from PIL import Image, ImageDraw

    image = Image.new("RGB", (400, 400), (247, 240, 226))
    draw = ImageDraw.Draw(image)
    draw.ellipse((100, 100, 300, 300), fill=petals)
    if speck is not None:
        draw.rectangle((120, 185, 150, 215), fill=speck)
    draw.ellipse((185, 185, 215, 215), fill=(205, 60, 110))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def test_the_calibration_holds_every_wash_of_the_palette_table_and_a_new_one_names_the_fix(monkeypatch):
    from rewards.colour_words import CalibrationMissing, wash_curves

    wash_curves.cache_clear()
    assert all(curve.shape == (12, 3) for curve in wash_curves().values())
    monkeypatch.setitem(PALETTES, "peach", ("#f9c9a8", "#f4a582", "#e88d64", PALETTES["peach"][3]))
    wash_curves.cache_clear()
    try:
        with pytest.raises(CalibrationMissing, match=r"#e88d64.*python -m bench.colour_words --calibrate"):
            wash_curves()
    finally:
        wash_curves.cache_clear()


def test_a_grey_flower_with_a_few_warm_specks_is_not_a_peach_one():
    """Run on the GPU (docs/learning.md): grey flowers with a few peach specks read as peach, because only the
    specks were saturated enough to have a hue. Every pixel is named now, the grey ones as none of the colour words."""
    peach = PALETTES["peach"][1]
    rgb = tuple(int(peach[i : i + 2], 16) for i in (1, 3, 5))
    grey = (150, 150, 156)
    specked = subject_match(flower_png(grey, speck=rgb), "a peach hibiscus")
    assert not specked.on_subject, specked
    assert subject_match(flower_png(rgb), "a peach hibiscus").on_subject


@pytest.mark.browser
def test_every_subject_in_its_palette_outscores_the_same_sketch_in_a_wrong_one(flower_sketch):
    from renderers import render_many

    pairs = []
    for index, subject in enumerate(SUBJECTS):
        sketch = compact_sketch(index, subject)
        pairs.append((subject, sketch, repaint(sketch, subject, wrong_word(subject))))
    # One pool for every render: two per subject.
    results = render_many([text for _, own, wrong in pairs for text in (own, wrong)], deadline_s=60.0)
    assert all(result.ok and result.png is not None for result in results), [r.errors for r in results]
    scorer = ImageStatsScorer()
    judge = PoolSimilarityJudge(JudgeSettings(), load_pool())
    for (subject, _, _), own, wrong in zip(pairs, results[0::2], results[1::2], strict=True):
        assert own.png is not None and wrong.png is not None
        mine, theirs = subject_match(own.png, subject), subject_match(wrong.png, subject)
        assert mine.on_subject and not theirs.on_subject, (subject, mine, theirs)
        assert mine.match > theirs.match + 0.3, (subject, mine, theirs)
        # The aesthetic stand-in: the subject's colours score higher; without a subject, the same two score alike.
        own_score, wrong_score = scorer.score_one(own.png, subject), scorer.score_one(wrong.png, subject)
        assert own_score.score > wrong_score.score, (subject, own_score, wrong_score)
        assert own_score.backend.startswith("offline")
        # The judge stand-in: the painting in the subject's colours has the higher merit, read for that subject.
        own_profile, wrong_profile = judge.prepare_rollout(own.png), judge.prepare_rollout(wrong.png)
        assert judge.merit(own_profile, subject) > judge.merit(wrong_profile, subject), subject
        assert judge.backend_id.startswith("offline")


@pytest.mark.browser
def test_every_subject_in_its_css_names_is_on_subject_and_each_of_its_neighbours_is_off():
    """The demo's warm start paints a subject and its neighbours in CSS names (`procedural.NAMED_WASHES`); GRPO can
    only learn the subject if the subject's own sketches read as on subject and its neighbours' as off."""
    from renderers import render_many

    sketches = [compact_sketch(index, subject, named_colours=True) for index, subject in enumerate(SUBJECTS)]
    results = dict(zip(SUBJECTS, render_many(sketches, deadline_s=60.0), strict=True))
    for subject, result in results.items():
        assert result.ok and result.png is not None, (subject, result.errors)
        own = subject_match(result.png, subject)
        assert own.on_subject, subject
        for neighbour in neighbours(subject, SUBJECTS):
            png = results[neighbour].png
            assert png is not None
            theirs = subject_match(png, subject)
            assert not theirs.on_subject, (subject, neighbour, theirs)


def petals_in(sketch: str, colour: str, opacity: int | None = None) -> str:
    """`sketch` (a named compact sketch) with its petal wash replaced by `colour`, and its opacity by `opacity`."""
    import re

    fill = re.search(r'brush.fill\("([a-z]+)", (\d+)\);', sketch)
    assert fill is not None
    return sketch.replace(fill.group(0), f'brush.fill("{colour}", {opacity or fill.group(2)});', 1)


@pytest.mark.browser
def test_rose_coral_and_orange_paintings_are_refused_as_peach_and_a_pale_peach_one_is_not():
    """The demo once settled on rose-pink petals that the hue reading counted as peach. Named by the nearest word's
    washes as the renderer thins them on paper, a rose, a coral and an orange painting are not peach, at full
    strength or thinned, and the palest peach wash thinned further still is."""
    from bench.colour_words import curve, swatch_sketch
    from renderers import render_many
    from rewards.colour_difference import ciede2000
    from rewards.colour_words import wash_curves

    sketch = compact_sketch(100, "a peach hibiscus", named_colours=True)
    paintings = {
        "rose": petals_in(sketch, "indianred"),
        "pale rose": petals_in(sketch, "indianred", 120),
        "coral": petals_in(sketch, PALETTES["coral"][1]),
        "orange": petals_in(sketch, PALETTES["orange"][1]),
        "pale orange": petals_in(sketch, NAMED_WASHES["orange"][0], 120),
        "pale peach": petals_in(sketch, PALETTES["peach"][0], 150),
        "peach": sketch,
    }
    mid = PALETTES["peach"][1]
    results = render_many([*paintings.values(), swatch_sketch(mid)], deadline_s=60.0)
    assert all(result.png is not None for result in results), [result.errors for result in results]
    pngs: dict[str, bytes] = {name: result.png for name, result in zip([*paintings, "swatch"], results, strict=True)}
    read = {name: subject_match(pngs[name], "a peach hibiscus") for name in paintings}
    for name in ("rose", "pale rose", "coral", "orange", "pale orange"):
        assert not read[name].on_subject and read[name].petals < 0.2, (name, read[name])
    assert read["pale peach"].on_subject and read["peach"].on_subject, read
    # Each refused painting is its own colour: the coral one a coral hibiscus, the orange ones an orange marigold.
    assert subject_match(pngs["coral"], "a coral hibiscus").on_subject
    assert subject_match(pngs["orange"], "an orange marigold").on_subject
    assert subject_match(pngs["pale orange"], "an orange marigold").on_subject
    # The calibration still describes the renderer: a swatch of peach's mid wash lies on its stored curve.
    assert np.median(ciede2000(np.array(curve(pngs["swatch"])), wash_curves()[mid])) < 1.5
