"""The renderer against real headless Chromium: determinism, isolation, the network wall, deadlines, faults."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio
from PIL import Image

from renderers import BrowserPool, RendererUnavailable, render_many
from tests.renderers.hostile import frames_of


pytestmark = pytest.mark.browser

SHORT_DEADLINE_S = 8.0
TINY = "function setup() { createCanvas(600, 600, WEBGL); background(200); }"
# A setup that never settles, from the only Promise a compartment can reach: an async function's result.
NEVER = "async function setup() { await new ((async () => {})().constructor)(() => {}); }"


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


@pytest_asyncio.fixture(scope="module")
async def short_pool():
    """One browser, four slots, an 8 s deadline: the hostile sketches run side by side."""
    async with BrowserPool(browsers=1, pages_per_browser=4, deadline_s=SHORT_DEADLINE_S) as pool:
        yield pool


async def test_same_sketch_and_seed_give_identical_pixels_and_other_seeds_differ(browser_pool, flower_sketch):
    first, second, other = await asyncio.gather(
        browser_pool.render(flower_sketch, seed=7),
        browser_pool.render(flower_sketch, seed=7),
        browser_pool.render(flower_sketch, seed=8),
    )
    assert first.ok and first.finished and first.errors == []
    assert (first.width, first.height) == (600, 600)
    assert first.png == second.png
    assert np.abs(pixels(first.png) - pixels(other.png)).mean() > 0.5
    assert 0.02 < first.coverage < 0.9
    assert 0 < first.draw_ms <= first.render_ms


async def test_a_polluting_sketch_does_not_leak_into_the_next_render(flower_sketch):
    # The intrinsics are frozen and the page is out of reach, so each attempt throws (caught); brush state and
    # the sketch's own globals die with its frame.
    polluter = """
    for (const attempt of [
      () => { window.leaked = 1; }, () => { Array.prototype.sum = 1; }, () => { Math.sin = () => 0; },
      () => { Math.random = () => 0.5; }, () => { globalThis.localLeak = 3; },
      () => setInterval(() => { parent.document.body.innerHTML = "x"; }, 1),
    ]) { try { attempt(); } catch (e) {} }
    function setup() {
      createCanvas(600, 600, WEBGL);
      brush.scaleBrushes(12); brush.fill("#000000", 255); brush.fillBleed(1); brush.noStroke();
    }
    """
    async with BrowserPool(browsers=1, pages_per_browser=1) as pool:
        fresh = await pool.render(flower_sketch, seed=3)
        dirty = await pool.render(polluter, seed=3)
        after = await pool.render(flower_sketch, seed=3)
        probe = await pool.render(
            "function setup() { createCanvas(600, 600, WEBGL);"
            " if ([].sum || typeof localLeak !== 'undefined' || Math.sin(1) === 0) throw new Error('leak'); }"
        )
    assert dirty.ok and dirty.errors == []
    assert after.png == fresh.png
    assert probe.finished and probe.errors == []


async def test_every_kind_of_network_request_from_the_frame_is_aborted_and_recorded(short_pool):
    # The sketch reaches none of these (its compartment has no such names); the router and the tripwire stand
    # behind it for code that has the frame, as p5 and p5.brush do, so that code is run in the frame here.
    attempts = """() => {
      const attempts = [
        () => fetch("http://fetch.test/a").catch(() => {}),
        () => { const xhr = new XMLHttpRequest(); xhr.open("GET", "http://xhr.test/b"); xhr.send(); },
        () => { new Image().src = "http://image.test/c.png"; },
        () => navigator.sendBeacon("http://beacon.test/d", "x"),
        () => new WebSocket("ws://socket.test/e"),
        () => import("http://import.test/f.js").catch(() => {}),
        () => new EventSource("http://events.test/h"),
        () => { const link = document.createElement("link"); link.rel = "stylesheet";
                link.href = "http://link.test/i.css"; document.head.appendChild(link); },
        () => document.body.insertAdjacentHTML("beforeend", '<img src="http://img.test/j.png">'),
        () => new RTCPeerConnection({ iceServers: [{ urls: "stun:rtc.test:3478" }] }),
      ];
      for (const attempt of attempts) { try { attempt(); } catch (e) {} }
    }"""
    rendering = asyncio.ensure_future(short_pool.render(NEVER))
    while not any("/r/" in frame.url for frame in frames_of(short_pool)):
        await asyncio.sleep(0.05)
    frame = next(frame for frame in frames_of(short_pool) if "/r/" in frame.url)
    await frame.evaluate(attempts)
    result = await rendering
    hosts = {url.split("/")[2] for url in result.blocked_requests if url.startswith(("http", "ws"))}
    # The refused import and the markup image are recorded by the watcher's read, which a render killed at the
    # deadline never reaches; the router's and the tripwire's records come back with the timeout.
    expected = {"fetch.test", "xhr.test", "image.test", "beacon.test", "socket.test", "events.test", "link.test"}
    assert expected <= hosts
    assert any(line.startswith("RTCPeerConnection") for line in result.blocked_requests)
    assert result.timed_out


async def test_runaway_sketches_are_killed_at_the_deadline_and_the_pool_recovers(short_pool):
    hostile = [
        "function setup() { createCanvas(600, 600, WEBGL); } function draw() { while (true) {} }",
        "function setup() { while (true) {} }",
        "while (true) {} function setup() {}",
        NEVER,
    ]
    started = time.perf_counter()
    results = await asyncio.gather(*(short_pool.render(source) for source in hostile))
    assert time.perf_counter() - started < SHORT_DEADLINE_S + 5
    assert all(r.timed_out and not r.ok for r in results)
    good = await asyncio.gather(*(short_pool.render(TINY) for _ in range(4)))
    assert all(r.ok and r.finished for r in good)


async def test_a_memory_bomb_crashes_its_page_not_the_pool(browser_pool):
    bomb = "function setup() { const a = []; while (true) a.push(new Array(1e6).fill(1.5)); }"
    result = await browser_pool.render(bomb)
    assert result.crashed and not result.ok
    assert all(r.ok for r in await asyncio.gather(*(browser_pool.render(TINY) for _ in range(4))))


async def test_script_faults_come_back_as_errors(browser_pool):
    recursion, thrown, absent = await asyncio.gather(
        browser_pool.render(
            "function setup() { createCanvas(600, 600, WEBGL); const f = (n) => f(n + 1) + 1; f(0); }"
        ),
        browser_pool.render("function setup() { createCanvas(600, 600, WEBGL); } function draw() { null.x; }"),
        browser_pool.render("function setup() { createCanvas(600, 600, WEBGL); console.error('pigment'); }"),
    )
    assert not recursion.timed_out and "Maximum call stack size exceeded" in " ".join(recursion.errors)
    assert not thrown.finished and "reading 'x'" in " ".join(thrown.errors)
    # The compartment has no console: the name reads as undefined and using it throws.
    assert not absent.finished and "reading 'error'" in " ".join(absent.errors)


async def test_size_renders_the_same_picture_at_more_pixels(browser_pool, flower_sketch):
    small, large = await asyncio.gather(
        browser_pool.render(flower_sketch, seed=1, size=300), browser_pool.render(flower_sketch, seed=1, size=600)
    )
    assert (small.width, small.height) == (300, 300)
    downsampled = Image.open(io.BytesIO(large.png)).convert("RGB").resize((300, 300), Image.Resampling.BOX)
    assert np.abs(pixels(small.png) - np.asarray(downsampled, dtype=np.int16)).mean() < 12


async def test_a_dead_browser_is_replaced_transparently():
    others = set(_chromium_browser_pids())  # the session pool's browsers are not this test's to kill
    async with BrowserPool(browsers=1, pages_per_browser=1) as pool:
        assert (await pool.render(TINY)).ok
        victims = set(_chromium_browser_pids()) - others
        assert len(victims) == 1
        os.kill(victims.pop(), signal.SIGKILL)
        assert (await pool.render(TINY)).ok


async def test_missing_chromium_is_an_infrastructure_fault():
    with pytest.raises(RendererUnavailable, match="make setup"):
        await BrowserPool(executable="/nonexistent/chromium").start()


def test_render_many_returns_results_in_input_order_and_reports_progress():
    calls = []
    sources = [TINY, "function setup() { createCanvas(600, 600, WEBGL); }"]
    results = render_many(sources, size=64, progress=lambda done, total, _: calls.append((done, total)))
    assert [r.width for r in results] == [64, 64]
    assert sorted(calls) == [(1, 2), (2, 2)]


def _chromium_browser_pids() -> list[int]:
    """Chromium browser processes (not their helpers) descended from this test process."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        parents[int(stat.parent.name)] = (int(fields[1]), cmdline)
    mine = {os.getpid()}
    for _ in range(4):
        mine |= {pid for pid, (ppid, _) in parents.items() if ppid in mine}
    return [pid for pid in mine if b"chromium" in parents.get(pid, (0, b""))[1] and b"--type=" not in parents[pid][1]]
