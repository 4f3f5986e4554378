"""Hostile sketches against what crosses into p5 (renderers/boundary.py): written after reading the copier.

Each fixture in tests/renderers/boundary/ names its verdict on its first line, as in tests/renderers/sandbox/: `honest` fixtures wrap
their attack around the honest disc and must leave it byte for byte, the rest must earn their codes. Families: the
copy (species, getters, holes over prototype getters, lying lengths, boxed values, symbols, iterators, image-like
objects, random(list)), the brush methods' arguments (spread or computed past the static check), errors p5 throws,
verdict text (lone surrogates, the render's one-time path, the harness's source) and the one opaque picture.

They are rendered without the static check (most would fail it; the wall must hold anyway) and judged by the gate's
render-stage and picture checks. Each renders beside a good sketch on the other slot of a two-slot pool: the good
sketch keeps its exact coverage and picture whatever its neighbour does.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
import pytest_asyncio
from PIL import Image

from ground.settings import GateSettings
from renderers import BrowserPool
from renderers.watch import TOKEN
from rewards.gate import render_violations
from tests.renderers.hostile import HONEST, expectation, meets, reward_parts_json


FIXTURES = Path(__file__).parent / "boundary"
PATHS = sorted(FIXTURES.glob("*.js"))
SETTINGS = GateSettings()
# A good sketch on the loaded two-core test machine needs ~2 s, two at once up to ~6; none of these spins.
DEADLINE_S = 20.0


def opaque(png: bytes) -> bool:
    image = Image.open(io.BytesIO(png))
    return image.mode == "RGB" or image.getchannel("A").getextrema()[0] == 255


@pytest_asyncio.fixture(scope="module")
async def two_slots():
    async with BrowserPool(browsers=1, pages_per_browser=2, deadline_s=DEADLINE_S) as pool:
        yield pool


def test_there_are_at_least_30_boundary_fixtures_each_with_a_verdict():
    assert len(PATHS) >= 30
    assert all(expectation(path)[0] in ("pass", "honest") or expectation(path)[1] for path in PATHS)


@pytest.mark.browser
async def test_every_boundary_attack_gets_its_verdict_beside_a_good_sketch_that_keeps_its_coverage(
    two_slots, flower_sketch, capfd
):
    honest = (await two_slots.render(HONEST)).png
    good = await two_slots.render(flower_sketch, seed=3)
    assert good.ok and good.coverage and good.coverage > SETTINGS.coverage_floor
    wrong, neighbours, records = {}, {}, {}
    for path in PATHS:
        render, beside = await asyncio.gather(
            two_slots.render(path.read_text()), two_slots.render(flower_sketch, seed=3)
        )
        details = await render_violations(render, SETTINGS)
        if not meets(path, set(details), render.png, honest):
            wrong[path.name] = (sorted(details), render.fault_detail, render.errors[:2])
        if (beside.coverage, beside.png) != (good.coverage, good.png):
            neighbours[path.name] = beside.coverage
        records[path.name] = (reward_parts_json(render, details), render.png)
    assert wrong == {}
    assert neighbours == {}
    for name, (record, png) in records.items():
        # The verdict is data the harness wrote: it serialises, it is bounded, and it carries no render token.
        assert len(record) < 40_000 and not TOKEN.search(record), name
        assert json.loads(record)["verdict"]["violations"] is not None
        # One picture: whatever leaves the renderer is opaque.
        assert png is None or opaque(png), name
    assert "Traceback" not in "".join(capfd.readouterr())


@pytest.mark.browser
async def test_a_transparent_sheet_leaves_the_renderer_on_white_paper(two_slots):
    render = await two_slots.render((FIXTURES / "picture_transparent_sheet.js").read_text())
    pixels = Image.open(io.BytesIO(render.png))
    assert pixels.mode == "RGB" and pixels.getpixel((5, 5)) == (255, 255, 255)
    assert pixels.getpixel((300, 300)) != (255, 255, 255)


@pytest.mark.browser
async def test_an_uncaught_refusal_of_the_copy_or_of_p5_is_a_runtime_error_that_names_it(two_slots):
    getter, p5_error = [
        await two_slots.render((FIXTURES / name).read_text())
        for name in ("copy_getter_uncaught.js", "host_error_uncaught.js")
    ]
    assert getter.errors[0].startswith(
        "unhandled rejection: TypeError: max() takes lists of plain values, not getters"
    )
    # The getter's dark disc was never painted: the honest disc covers 0.08 of the sheet, with it 0.17 (measured).
    assert getter.png is None or getter.coverage < 0.12
    assert p5_error.errors[0].startswith(
        "unhandled rejection: TypeError: background() failed in p5: Invalid color string"
    )


@pytest.mark.browser
async def test_a_refused_brush_call_names_the_call_and_the_prompt_s_signature(two_slots):
    render = await two_slots.render((FIXTURES / "brush_bleed_direction.js").read_text())
    assert render.fault == "brush_arguments"
    assert render.fault_detail == 'brush.fillBleed(0.3, "out"): brush.fillBleed(amount) takes a finite number'
