"""The picture's own gate checks against real renders: no seed-pool painting is read as text or as a dark ground.

The refusals themselves are gate fixtures (`watercolour/fixtures/gate/text_*.js`, `dark_ground.js`), rendered and gated
in tests/rewards/test_gate.py; here are the paintings that must keep passing, and the fault when Tesseract is missing.
"""

from __future__ import annotations

import asyncio
import io

import pytest
from PIL import Image, ImageDraw, ImageFont

from ground.reference_pool import load_pool
from rewards.picture import rules as picture_rules


POOL = load_pool()


@pytest.mark.parametrize("reference", POOL, ids=[reference.name for reference in POOL])
def test_no_seed_pool_painting_is_read_as_text_or_as_a_dark_ground(reference):
    assert picture_rules.dark_ground(reference.png) == []
    assert asyncio.run(picture_rules.painted_text(reference.png)) == []


def test_without_tesseract_the_text_check_names_the_fix(monkeypatch):
    # The gate turns this into RendererUnavailable: a dead letter, never a painting passed unread.
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(picture_rules, "READER", picture_rules.TextReader())
    with pytest.raises(picture_rules.TextReaderMissing, match="make setup"):
        asyncio.run(picture_rules.painted_text(POOL[0].png))


def lettered(word: str) -> bytes:
    """Cream paper with `word` in large dark letters, as a PNG."""
    image = Image.new("RGB", (600, 600), "#f6f0e4")
    ImageDraw.Draw(image).text((60, 220), word, fill="#2a2a6a", font=ImageFont.load_default(size=150))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def test_pictures_gated_together_are_read_in_one_run_each_with_its_own_words(monkeypatch):
    pictures = (
        [reference.png for reference in POOL[:6]] + [lettered("LOVE")] + [reference.png for reference in POOL[6:9]]
    )
    alone = []
    for png in pictures:
        monkeypatch.setattr(picture_rules, "READER", picture_rules.TextReader())
        alone.append(asyncio.run(picture_rules.painted_text(png)))
    assert [bool(found) for found in alone] == [False] * 6 + [True] + [False] * 3 and "LOVE" in alone[6][0]
    reader = picture_rules.TextReader()
    monkeypatch.setattr(picture_rules, "READER", reader)

    async def together():
        return await asyncio.gather(*(picture_rules.painted_text(png) for png in pictures))

    assert asyncio.run(together()) == alone
    assert reader.runs == 1
    # Read again (a prefetch, then the step's score): from the reader's cache, no new run.
    assert asyncio.run(together()) == alone and reader.runs == 1


def test_a_later_picture_is_read_by_a_tesseract_already_waiting_and_reads_as_a_cold_one_would(monkeypatch):
    # A step's last painting is read alone after the last token: its Tesseract has loaded its model by then.
    cold = picture_rules.TextReader()
    expected = cold.words(lettered("LOVE")).result(timeout=60)
    cold.close()
    assert cold.spares_used == 0 and expected and expected[0][0] == "LOVE"

    reader = picture_rules.TextReader()
    first = reader.words(POOL[0].png).result(timeout=60)
    assert reader.runs == 1 and reader.spares_used == 0
    assert reader.words(lettered("LOVE")).result(timeout=60) == expected
    assert reader.runs == 2 and reader.spares_used == 1
    assert first == cold.words(POOL[0].png).result(timeout=60)  # the cold reader, closed: read cold
    reader.close()


def test_a_spare_tesseract_that_died_is_replaced_and_close_leaves_none_running():
    reader = picture_rules.TextReader()
    reader.words(POOL[0].png).result(timeout=60)
    spare = reader._spare
    assert spare is not None and spare.poll() is None, "a spare waits after a run"
    spare.kill()  # as the OOM killer would
    spare.wait()
    words = reader.words(lettered("LOVE")).result(timeout=60)
    assert words and words[0][0] == "LOVE" and reader.runs == 2 and reader.spares_used == 0
    waiting = reader._spare
    assert waiting is not None and waiting.poll() is None
    reader.close()
    assert waiting.poll() is not None and reader._spare is None
    # Closed: a later picture is still read (cold), and no spare is started after it.
    assert reader.words(lettered("WOW 10")).result(timeout=60)
    assert reader._spare is None


def test_a_forked_child_holds_no_copy_of_the_spare_that_would_keep_the_parents_next_read_waiting(monkeypatch):
    # Tesseract reads its picture list to the end of stdin: a copy of the pipe left open in a forked child (a
    # DataLoader or datasets worker) would hold the parent's next read until its timeout.
    import multiprocessing
    import time

    reader = picture_rules.TextReader()
    monkeypatch.setattr(picture_rules, "READER", reader)
    reader.words(POOL[0].png).result(timeout=60)
    assert reader._spare is not None and reader._spare.poll() is None
    context = multiprocessing.get_context("fork")
    child = context.Process(target=time.sleep, args=(30,))
    child.start()
    try:
        started = time.perf_counter()
        words = reader.words(lettered("LOVE")).result(timeout=20)
        assert words and words[0][0] == "LOVE" and reader.spares_used == 1
        assert time.perf_counter() - started < 10
    finally:
        child.kill()
        child.join()
        reader.close()
