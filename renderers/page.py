"""One pool slot: a browser context with a warm host page that runs one sketch at a time in a fresh frame.

The context is the slot's own (Chromium never shares a renderer process between contexts, so a sketch
that spins or crashes takes down only its slot). Its router serves the harness and the libraries from
memory and aborts and records everything else, WebSockets included (`route` does not see them).
"""

from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from renderers import harness
from renderers.coverage import paint_coverage
from watercolour.records import RenderResult


# Each render's files live under a random token; error texts drop it so equal sketches report equal errors.
TOKEN = re.compile(r"/r/[0-9a-f]{32}/")


@dataclass
class Outcome:
    """What the frame reported: the in-page state plus the requests it attempted."""

    png: bytes | None
    width: int
    height: int
    reason: str | None
    errors: list[str]
    draw_ms: float | None
    blocked: list[str]

    def result(self, seed: int, render_ms: float) -> RenderResult:
        """The render's outcome as the wire type, with the paint coverage of its PNG."""
        return RenderResult(
            ok=self.png is not None,
            png=self.png,
            width=self.width,
            height=self.height,
            seed=seed,
            coverage=paint_coverage(self.png) if self.png else None,
            finished=self.reason in ("setup", "draw"),
            errors=self.errors,
            blocked_requests=self.blocked,
            render_ms=render_ms,
            draw_ms=self.draw_ms,
        )


@dataclass
class Slot:
    """A context + host page on one browser; `renders` counts sketches run, for periodic recycling."""

    browser: Any
    context: Any
    page: Any
    libraries: dict[str, bytes]
    renders: int = 0
    crashed: bool = False
    _files: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)

    @classmethod
    async def open(cls, browser, libraries: dict[str, bytes]) -> Slot:
        context = await browser.new_context(viewport={"width": 700, "height": 700}, device_scale_factor=1)
        slot = cls(browser=browser, context=context, page=None, libraries=libraries)
        slot._files = slot._harness_files()
        await context.route("**/*", slot._route)
        await context.route_web_socket("**/*", slot._refuse_web_socket)
        slot.page = await context.new_page()
        slot.page.on("crash", slot._on_crash)
        await slot.page.goto(harness.ORIGIN + "/", wait_until="load")
        return slot

    def _on_crash(self, _page) -> None:
        self.crashed = True

    async def _route(self, route) -> None:
        url = route.request.url
        path = url[len(harness.ORIGIN) :] if url.startswith(harness.ORIGIN + "/") else None
        if path in self._files:
            body, content_type = self._files[path]
            await route.fulfill(
                status=200, body=body, content_type=content_type, headers={"Access-Control-Allow-Origin": "*"}
            )
        else:
            self.blocked.append(url[:200])
            await route.abort()

    async def _refuse_web_socket(self, ws) -> None:
        self.blocked.append(ws.url[:200])
        await ws.close(code=1008, reason="network access is not allowed")

    def _harness_files(self) -> dict[str, tuple[bytes, str]]:
        js = "text/javascript; charset=utf-8"
        return {
            "/": (harness.HOST_HTML.encode(), "text/html"),
            harness.LIBRARY_PATHS["p5"]: (self.libraries["p5"], js),
            harness.LIBRARY_PATHS["p5.brush"]: (self.libraries["p5.brush"], js),
        }

    async def run(self, source: str, seed: int, size: int | None) -> Outcome:
        """Mount a fresh frame for `source` and wait until it has painted; the caller enforces the deadline."""
        self.renders += 1
        self.blocked = []
        token = f"/r/{uuid.uuid4().hex}/"  # matches TOKEN
        js = "text/javascript; charset=utf-8"
        self._files = self._harness_files() | {
            token + "index.html": (harness.FRAME_HTML.encode(), "text/html"),
            token + "seed.js": (harness.seed_script(seed, size).encode(), js),
            token + "probe.js": (harness.PROBE_JS.encode(), js),
            token + "sketch.js": (source.encode("utf-8", "replace"), js),
        }
        async with self.page.expect_event(
            "framenavigated", predicate=lambda frame: token in frame.url, timeout=0
        ) as navigated:
            await self.page.evaluate(harness.MOUNT_FRAME_JS, token + "index.html")
        frame = await navigated.value
        await frame.wait_for_load_state("domcontentloaded", timeout=0)
        await frame.evaluate("window.__wc.finished")
        state = await frame.evaluate("window.__wc.read()")
        png = base64.b64decode(state["png"].split(",", 1)[1]) if state["png"] else None
        return Outcome(
            png=png,
            width=state["w"],
            height=state["h"],
            reason=state["reason"],
            errors=[TOKEN.sub("/", e)[:500] for e in state["errors"]][:20],
            draw_ms=state["drawMs"],
            blocked=list(self.blocked),
        )

    async def close(self) -> None:
        await self.context.close()
