"""The gate against its fixtures: every expected verdict, static ones without a browser, the rest in Chromium.

Runaway sketches (endless loops, a promise that never settles, a memory bomb) run on their own pool with a
short deadline, so the suite stays fast, and good sketches are rendered on that pool after them: a hostile
input that broke the pool shows up as those failing.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
import pytest_asyncio

import watercolour
from ground.records import RewardParts
from ground.settings import GateSettings
from renderers import RendererUnavailable
from rewards.gate import gate, static_check


FIXTURES = Path(watercolour.__file__).parent / "fixtures" / "gate"
EXPECTED = {name: v for name, v in json.loads((FIXTURES / "expected.json").read_text()).items() if name != "_format"}
RUNTIME_CODES = {"render_timeout", "render_crashed", "no_canvas", "network_attempt", "runtime_error", "blank_canvas"}
RUNTIME_CODES |= {"canvas_size", "dark_ground", "text_in_picture"}
RENDERED = sorted(n for n, v in EXPECTED.items() if v["passed"] or not set(v["violations"]) - RUNTIME_CODES)
STATIC = sorted(set(EXPECTED) - set(RENDERED))
KILLED = {"render_timeout", "render_crashed"}
RUNAWAY = [n for n in RENDERED if KILLED & set(EXPECTED[n]["violations"] + EXPECTED[n].get("any_of", []))]
COMPLETING = [name for name in RENDERED if name not in RUNAWAY]
# Short, so runaway sketches cost little; not shorter, because the test machine's two cores are shared and a
# good sketch rendered after the runaways must still finish inside it.
HOSTILE_DEADLINE_S = 10.0


def completion(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8", "replace")


def assert_expected(name: str, verdict) -> None:
    """The fixture's expected verdict, and a record of it the rollout store can write (every string valid UTF-8)."""
    expected = EXPECTED[name]
    record = RewardParts(reward=0.0 if not verdict.passed else None, verdict=verdict)
    assert (
        json.loads(record.model_dump_json(exclude={"verdict": {"render": {"png"}}}))["verdict"]["passed"]
        is verdict.passed
    )
    assert verdict.passed is expected["passed"], (name, verdict.violations, verdict.details)
    assert set(expected["violations"]) <= set(verdict.violations), (name, verdict.violations, verdict.details)
    if "any_of" in expected:
        assert set(expected["any_of"]) & set(verdict.violations), (name, verdict.violations)


def test_there_are_at_least_25_broken_cheating_or_hostile_fixtures():
    assert len([n for n, v in EXPECTED.items() if not v["passed"]]) >= 25
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_file() and p.name != "expected.json") == sorted(EXPECTED)


@pytest.mark.parametrize("name", STATIC)
def test_static_refusals_are_refused_without_rendering(name):
    verdict = static_check(completion(name))
    assert_expected(name, verdict)
    assert verdict.render is None


@pytest.mark.parametrize("name", RENDERED)
def test_fixtures_judged_at_render_time_pass_the_static_checks(name):
    verdict = static_check(completion(name))
    assert verdict.passed, verdict.details
    assert verdict.sketch and verdict.sketch_hash and verdict.counts["shapes"] + verdict.counts["circles"] > 0


def test_a_refusal_is_only_no_sketch():
    assert static_check(completion("refusal.txt")).violations == ["no_sketch"]


def test_a_reply_cut_off_anywhere_is_refused_as_truncated_not_for_its_cut_tokens():
    sketch = completion("allowlist_flower.js")
    for cut in range(200, len(sketch) - 2, 23):  # past setup, so there is a sketch to speak of
        assert static_check("Sure:\n```js\n" + sketch[:cut]).violations == ["truncated"], sketch[cut - 30 : cut]


def test_a_2mb_source_is_refused_before_parsing():
    huge = "function setup() { createCanvas(600, 600, WEBGL); }\n" + "// padding\n" * 200_000
    started = time.perf_counter()
    verdict = static_check(huge)
    assert verdict.violations == ["oversize_source"] and verdict.sketch is None
    assert time.perf_counter() - started < 0.5


def test_a_verdict_keeps_at_most_20_reasons_a_code_and_counts_the_rest():
    names = "".join(f"v{i};\n" for i in range(1000))  # a thousand globals the prompt does not permit
    verdict = static_check(f"function setup() {{ createCanvas(600, 600, WEBGL); brush.circle(1, 1, 1, 0);\n{names}}}")
    details = verdict.details["name_outside_allowlist"]
    assert len(details) == 21 and details[-1] == "... and 980 more"


def test_the_source_limit_is_a_setting():
    assert static_check(completion("allowlist_flower.js"), GateSettings(max_source_chars=100)).violations == [
        "oversize_source"
    ]


async def gate_each_timed(names: list[str], pool, per_core: bool = True) -> list[tuple[str, object, float]]:
    """Gate fixtures concurrently, never more than the pool has slots (so a time excludes queueing) and, for
    sketches that should finish, no more than the machine has cores (four on two cores starve past the deadline)."""
    slots = pool.browsers * pool.pages_per_browser
    at_once = asyncio.Semaphore(min(slots, os.cpu_count() or 1) if per_core else slots)

    async def timed(name: str):
        async with at_once:
            started = time.perf_counter()
            verdict = await gate(completion(name), pool)
            return name, verdict, time.perf_counter() - started

    return await asyncio.gather(*(timed(name) for name in names))


@pytest.mark.browser
async def test_fixtures_that_run_to_completion_get_their_verdict_in_bounded_time(browser_pool):
    for name, verdict, seconds in await gate_each_timed(COMPLETING, browser_pool):
        assert_expected(name, verdict)
        assert seconds < browser_pool.deadline_s + 5, (name, seconds)
        if verdict.passed:
            assert verdict.render.coverage >= GateSettings().coverage_floor


@pytest_asyncio.fixture(scope="module")
async def hostile_pool():
    from renderers import BrowserPool

    async with BrowserPool(browsers=2, pages_per_browser=2, deadline_s=HOSTILE_DEADLINE_S) as pool:
        yield pool


@pytest.mark.browser
async def test_runaway_sketches_are_killed_at_the_deadline_and_the_pool_still_paints(hostile_pool):
    for name, verdict, seconds in await gate_each_timed(RUNAWAY, hostile_pool, per_core=False):
        assert_expected(name, verdict)
        assert seconds < HOSTILE_DEADLINE_S + 5, (name, seconds)
    for name in ("allowlist_flower.js", "prose_around_sketch.md"):
        assert_expected(name, await gate(completion(name), hostile_pool))


@pytest.mark.browser
async def test_a_renderer_that_does_not_answer_raises_rather_than_giving_a_verdict(hostile_pool):
    # Last in the module: cancelling a render mid-flight may cost the pool a slot.
    with pytest.raises(RendererUnavailable, match="deadline_s"):
        await gate(completion("allowlist_flower.js"), hostile_pool, settings=GateSettings(deadline_s=0.01))
