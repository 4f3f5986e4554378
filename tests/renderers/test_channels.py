"""Every channel from the page is bounded inside the page, before anything crosses DevTools or the driver.

An uncaught error or rejection of tens of megabytes of non-ASCII characters crossed the protocol six bytes a
character and killed Playwright's driver; two million console warnings saturated the event loop that renders the
sketch beside them. The fixtures in tests/renderers/channels/ are that family and its variants (control, astral,
quote and lone-surrogate characters; error objects, function names, nested stacks, getters that spin; counts and
bytes just under and over the budget), each naming its verdict on its first line as the other hostile suites do, each
rendered beside a good sketch on the other slot, which must keep its verdict, coverage and picture. What crossed is
counted at the watcher: no message outside the tripwire's reports, and the reports within the budget.

No sketch reaches `console` (its compartment has none, and no p5 call the prompt permits logs), so the console cases
run as library code in the render's frame would, through Playwright: every level floods, and the render beside it
keeps its verdict.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path

import pytest
import pytest_asyncio

from ground.settings import GateSettings
from renderers import BrowserPool, harness
from renderers.watch import TOKEN, RenderWatch, json_bytes
from rewards.gate import VERDICT_BYTES, render_violations
from tests.renderers.hostile import HONEST, expectation, frames_of, meets, reward_parts_json


pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).parent / "channels"
PATHS = sorted(FIXTURES.glob("*.js"))
SETTINGS = GateSettings()
DEADLINE_S = 20.0
# A setup that never settles (the only Promise a compartment can reach is an async function's result).
NEVER = "async function setup() { await new ((async () => {})().constructor)(() => {}); }"
# One of each shape of console method (a message, a label, a table, a timer): the tripwire replaces them all alike.
LEVELS = ["log", "warn", "debug", "table", "count", "timeLog"]


class Crossings:
    """What reached the watcher from each render (by its token): the tripwire's reports and anything else."""

    def __init__(self) -> None:
        self.reports: dict[str, list[str]] = defaultdict(list)
        self.others: dict[str, int] = defaultdict(int)

    def wrap(self, patch: pytest.MonkeyPatch) -> None:
        crossings = self
        binding, console, exception = RenderWatch._on_binding, RenderWatch._on_console, RenderWatch._on_exception

        def on_binding(watch: RenderWatch, event: dict) -> None:
            if watch._mine(event.get("executionContextId")):
                crossings.reports[watch.token].append(event["payload"])
            binding(watch, event)

        def on_other(original):
            def record(watch: RenderWatch, event: dict) -> None:
                crossings.others[watch.token] += watch._mine(
                    event.get("executionContextId") or event.get("exceptionDetails", {}).get("executionContextId")
                )
                original(watch, event)

            return record

        patch.setattr(RenderWatch, "_on_binding", on_binding)
        patch.setattr(RenderWatch, "_on_console", on_other(console))
        patch.setattr(RenderWatch, "_on_exception", on_other(exception))

    def within_budget(self) -> list[str]:
        """The renders that sent anything but bounded reports, or more than the budget allows."""
        limit = harness.MAX_ERRORS + harness.MAX_ATTEMPTS + 1
        over = [token for token, count in self.others.items() if count]
        over += [
            token
            for token, reports in self.reports.items()
            if len(reports) > limit or sum(json_bytes(report) for report in reports) > harness.MAX_PAGE_BYTES + 200
        ]
        return over


@pytest_asyncio.fixture(scope="module")
async def watched():
    crossings = Crossings()
    with pytest.MonkeyPatch.context() as patch:
        crossings.wrap(patch)  # before the pool starts: the watchers bind their handlers then
        async with BrowserPool(browsers=1, pages_per_browser=2, deadline_s=DEADLINE_S) as pool:
            yield pool, crossings


def test_there_are_fixtures_for_every_channel_family_each_with_a_verdict():
    names = [path.stem for path in PATHS]
    assert len(PATHS) >= 14 and all(expectation(path)[1] for path in PATHS)
    for family in ("error_", "rejection_", "_huge", "_flood", "astral", "control", "non_ascii", "surrogate"):
        assert any(family in name for name in names), family


async def test_every_channel_fixture_gets_its_verdict_beside_a_good_sketch_and_nothing_unbounded_crosses(
    watched, flower_sketch, capfd
):
    pool, crossings = watched
    honest = (await pool.render(HONEST)).png
    good = await pool.render(flower_sketch, seed=3)
    generation = pool._driver.generation
    wrong, neighbours, sizes = {}, {}, {}
    for path in PATHS:
        render, beside = await asyncio.gather(pool.render(path.read_text()), pool.render(flower_sketch, seed=3))
        details = await render_violations(render, SETTINGS)
        if not meets(path, set(details), render.png, honest):
            wrong[path.name] = (sorted(details), render.fault_detail, [error[:80] for error in render.errors[:2]])
        if (beside.ok, beside.coverage, beside.png) != (True, good.coverage, good.png):
            neighbours[path.name] = (beside.coverage, beside.errors[:1], beside.fault)
        record = reward_parts_json(render, details)
        sizes[path.name] = len(record.encode())
        assert not TOKEN.search(record), path.name
    assert wrong == {}
    assert neighbours == {}
    assert max(sizes.values()) <= VERDICT_BYTES, sizes
    assert crossings.within_budget() == []
    assert pool._driver.generation == generation and not pool._driver.lost.is_set()  # the driver never died
    assert "Traceback" not in "".join(capfd.readouterr())


async def frame_of_a_waiting_render(pool: BrowserPool) -> tuple[asyncio.Future, object]:
    """A render of NEVER in flight, and its frame (as Playwright knows it) once mounted."""
    before = {id(frame) for frame in frames_of(pool)}
    rendering = asyncio.ensure_future(pool.render(NEVER))
    while True:
        fresh = [frame for frame in frames_of(pool) if id(frame) not in before and "/r/" in frame.url]
        if fresh:
            return rendering, fresh[0]
        await asyncio.sleep(0.05)


async def run_in_frame(frame, script: str) -> None:
    from playwright.async_api import Error as PlaywrightError

    try:
        await frame.evaluate(script)
    except PlaywrightError:  # the flood ended the render and its frame went with it
        pass


async def test_a_flood_of_every_console_level_ends_its_own_render_and_the_render_beside_keeps_its_verdict(
    watched, flower_sketch
):
    pool, crossings = watched
    good = await pool.render(flower_sketch, seed=3)
    results = {}
    for level in LEVELS + ["error", "assert"]:
        rendering, frame = await frame_of_a_waiting_render(pool)
        call = "console.assert(false, message + i)" if level == "assert" else f"console.{level}(message + i)"
        # Errors carry a short message, so the count runs out before the bytes (rejection_bytes_flood.js: the bytes).
        message = '"small "' if level in ("error", "assert") else '"\\u00e9\\ud83c\\udf38".repeat(50)'
        flood = f"() => {{ const message = {message}; for (let i = 0; i < 2000000; i++) {call}; }}"
        beside, _ = await asyncio.gather(pool.render(flower_sketch, seed=3), run_in_frame(frame, flood))
        render = await rendering
        results[level] = (
            render.fault,
            render.fault_detail,
            (beside.coverage, beside.png) == (good.coverage, good.png),
        )
    quiet = f"more than {harness.MAX_CONSOLE} console messages"
    noisy = f"more than {harness.MAX_ERRORS} errors and rejections"
    expected = {level: ("flood", quiet, True) for level in LEVELS} | {
        level: ("flood", noisy, True) for level in ("error", "assert")
    }
    assert results == expected
    assert crossings.within_budget() == []


async def test_one_huge_console_error_is_cut_inside_the_page_and_is_a_runtime_error(watched):
    pool, crossings = watched
    rendering, frame = await frame_of_a_waiting_render(pool)
    script = '() => { console.error("\\u0001\\u00e9".repeat(50000000), { huge: "x".repeat(1e7) }); setTimeout(() => { throw "done"; }, 0); }'
    await run_in_frame(frame, script)
    render = await rendering
    assert render.errors[0].startswith("console: \x01\xe9\x01\xe9") and render.errors[0].endswith(" [cut]")
    assert render.errors[1] == "uncaught: done" and not render.timed_out
    assert crossings.within_budget() == []
    assert json.loads(reward_parts_json(render, await render_violations(render, SETTINGS)))
