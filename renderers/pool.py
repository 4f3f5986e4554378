"""A pool of warm headless Chromium browsers that renders untrusted sketches, one isolated page each.

Launch flags: WebGL through ANGLE on Mesa's llvmpipe with software Canvas2D. The published recipe's
SwiftShader flags make Chromium treat SwiftShader as a GPU and rasterise p5.brush's Canvas2D fill masks
through it, which costs 15-80 s per sketch; this recipe paints the same pictures in about a second
(docs/rendering.md has the measurements).
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from dataclasses import dataclass, field

from renderers import harness
from renderers.assets import library
from renderers.coverage import paint_coverage
from watercolour.records import RenderResult


CHROMIUM = "/usr/bin/chromium"

FAST_FLAGS = [
    "--use-gl=angle",
    "--use-angle=gl-egl",
    "--ignore-gpu-blocklist",
    "--disable-accelerated-2d-canvas",
]
# Shared by every configuration: no background traffic, and a dead proxy plus a resolver that resolves
# nothing, so a request that slipped past the router still goes nowhere.
COMMON_FLAGS = [
    "--no-sandbox",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--proxy-server=127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND",
]


class RendererUnavailable(RuntimeError):
    """The renderer itself failed (no browser, a browser that died for reasons not the sketch's)."""


@dataclass
class BrowserPool:
    """Renders sketches on `browsers` warm Chromium processes, each running up to `pages_per_browser` pages.

    Use as `async with BrowserPool() as pool: result = await pool.render(source, seed=0)`.
    """

    browsers: int = field(default_factory=lambda: max(1, min(4, os.cpu_count() or 1)))
    pages_per_browser: int = 2
    deadline_s: float = 30.0
    heap_mb: int = 512
    flags: list[str] = field(default_factory=lambda: list(FAST_FLAGS))
    executable: str = CHROMIUM

    def __post_init__(self) -> None:
        self._playwright = None
        self._free: asyncio.Queue | None = None
        self._slots: asyncio.Semaphore | None = None
        self._libraries = {name: library(name)[1] for name in ("p5", "p5.brush")}

    async def __aenter__(self) -> BrowserPool:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def start(self) -> None:
        from playwright.async_api import async_playwright

        if not os.path.exists(self.executable):
            raise RendererUnavailable(f"Chromium not found at {self.executable}: run `make setup`")
        self._playwright = await async_playwright().start()
        self._free = asyncio.Queue()
        for _ in range(self.browsers):
            self._free.put_nowait(await self._launch())
        self._slots = asyncio.Semaphore(self.browsers * self.pages_per_browser)

    async def close(self) -> None:
        if self._free is not None:
            while not self._free.empty():
                browser = self._free.get_nowait()
                await browser.close()
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None

    async def _launch(self):
        args = COMMON_FLAGS + self.flags + [f"--js-flags=--max-old-space-size={self.heap_mb}"]
        return await self._playwright.chromium.launch(executable_path=self.executable, headless=True, args=args)

    async def render(self, source: str, seed: int = 0) -> RenderResult:
        """Run `source` in a fresh page and read the WEBGL canvas back; sketch faults come back in the result."""
        assert self._slots is not None and self._free is not None, "BrowserPool.start() was not called"
        async with self._slots:
            browser = await self._free.get()
            try:
                return await self._render_on(browser, source, seed)
            finally:
                if not browser.is_connected():
                    browser = await self._launch()
                self._free.put_nowait(browser)

    async def _render_on(self, browser, source: str, seed: int) -> RenderResult:
        started = time.perf_counter()
        blocked: list[str] = []
        files = {
            "/": (harness.INDEX_HTML.encode(), "text/html"),
            "/seed.js": (harness.seed_script(seed).encode(), "text/javascript"),
            "/p5.min.js": (self._libraries["p5"], "text/javascript"),
            "/p5.brush.js": (self._libraries["p5.brush"], "text/javascript"),
            "/probe.js": (harness.PROBE_JS.encode(), "text/javascript"),
            "/sketch.js": (source.encode("utf-8", "replace"), "text/javascript; charset=utf-8"),
        }

        async def route(route):
            url = route.request.url
            path = url[len(harness.ORIGIN) :] if url.startswith(harness.ORIGIN + "/") else None
            if path in files:
                body, content_type = files[path]
                await route.fulfill(status=200, body=body, content_type=content_type)
            else:
                blocked.append(url[:200])
                await route.abort()

        context = await browser.new_context(viewport={"width": 700, "height": 700}, device_scale_factor=1)
        crashed = False
        try:
            await context.route("**/*", route)
            page = await context.new_page()

            def on_crash(_page) -> None:
                nonlocal crashed
                crashed = True

            page.on("crash", on_crash)

            async def run_sketch() -> None:
                # The sketch's top level runs before DOMContentLoaded, so the deadline covers the load too.
                await page.goto(harness.ORIGIN + "/", wait_until="domcontentloaded", timeout=0)
                await page.evaluate("window.__wc.finished")

            try:
                await asyncio.wait_for(run_sketch(), timeout=self.deadline_s)
            except TimeoutError:
                return RenderResult(
                    ok=False, seed=seed, timed_out=True, blocked_requests=blocked, render_ms=_ms(started)
                )
            state = await page.evaluate(
                """() => {
                  const c = document.querySelector("canvas");
                  return { errors: window.__wc.errors, reason: window.__wc.reason, drawMs: window.__wc.drawMs,
                           png: c ? c.toDataURL("image/png") : null, w: c ? c.width : 0, h: c ? c.height : 0 };
                }"""
            )
        except Exception as error:  # a page that crashed or was killed under us
            if crashed or "crash" in str(error).lower():
                return RenderResult(
                    ok=False, seed=seed, crashed=True, blocked_requests=blocked, render_ms=_ms(started),
                    errors=["page crashed (memory or a runaway sketch)"],
                )
            raise RendererUnavailable(f"render failed in the harness: {error}") from error
        finally:
            try:
                await asyncio.wait_for(context.close(), timeout=5)
            except Exception:
                await browser.close()
        png = base64.b64decode(state["png"].split(",", 1)[1]) if state["png"] else None
        return RenderResult(
            ok=png is not None,
            png=png,
            width=state["w"],
            height=state["h"],
            seed=seed,
            coverage=paint_coverage(png) if png else None,
            finished=state["reason"] in ("setup", "draw"),
            errors=[str(e)[:500] for e in state["errors"]][:20],
            blocked_requests=blocked,
            render_ms=_ms(started),
            draw_ms=state["drawMs"],
        )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)
