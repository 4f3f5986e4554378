"""The picture's own gate checks against real renders: no seed-pool painting is read as text or as a dark ground.

The refusals themselves are gate fixtures (`watercolour/fixtures/gate/text_*.js`, `dark_ground.js`), rendered and gated
in tests/test_gate.py; here are the paintings that must keep passing, and the fault when Tesseract is missing.
"""

from __future__ import annotations

import asyncio

import pytest

from rewards import picture_rules
from watercolour.reference_pool import load_pool


POOL = load_pool()


@pytest.mark.parametrize("reference", POOL, ids=[reference.name for reference in POOL])
def test_no_seed_pool_painting_is_read_as_text_or_as_a_dark_ground(reference):
    assert picture_rules.dark_ground(reference.png) == []
    assert asyncio.run(picture_rules.painted_text(reference.png)) == []


def test_without_tesseract_the_text_check_names_the_fix(monkeypatch):
    # The gate turns this into RendererUnavailable: a dead letter, never a painting passed unread.
    monkeypatch.setenv("PATH", "/nonexistent")
    picture_rules._words.cache_clear()
    with pytest.raises(picture_rules.TextReaderMissing, match="make setup"):
        asyncio.run(picture_rules.painted_text(POOL[0].png))
    picture_rules._words.cache_clear()
