"""The reference-style renderer the benchmark compares against: the published recipe's flags, sequential.

Each sketch gets a fresh browser context and page on one browser launched with
`--use-gl=angle --use-angle=swiftshader --enable-unsafe-swiftshader`; with those flags Chromium treats
SwiftShader as a GPU and rasterises p5.brush's Canvas2D fill masks through it (RENDERING.md section 1).
The page, seed and readback are the pool's own, so only the flags and the scheduling differ.
"""

from __future__ import annotations

import asyncio
import time

from ground.records import RenderResult
from renderers.assets import LIBRARIES, library
from renderers.browsers import CHROMIUM, COMMON_FLAGS
from renderers.domains import Driver
from renderers.page import Slot


PUBLISHED_FLAGS = ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
# The published renders took 69-96 s; a generous cap keeps one pathological sketch from eating the run.
BASELINE_DEADLINE_S = 240.0


async def render_sequentially(sources: list[tuple[str, int]], size: int = 600) -> tuple[list[RenderResult], float]:
    """Launch a browser, render each (source, seed) on a fresh page one after another; return results, wall s."""
    started = time.perf_counter()
    libraries = {name: library(name)[1] for name in LIBRARIES}
    results = []
    driver = await Driver.start()
    try:
        browser = await driver.playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=COMMON_FLAGS + PUBLISHED_FLAGS
        )
        for source, seed in sources:
            render_started = time.perf_counter()
            slot = await Slot.open(browser, libraries, driver, asyncio.Event())
            outcome = await asyncio.wait_for(slot.run(source, seed, size), timeout=BASELINE_DEADLINE_S)
            await slot.close()
            results.append(outcome.result(seed, round((time.perf_counter() - render_started) * 1000.0, 1)))
        await browser.close()
    finally:
        await driver.stop()
    return results, time.perf_counter() - started
