"""One pool slot: a browser context with a warm host page that runs one sketch at a time in a fresh frame.

The context is the slot's own (Chromium never shares a renderer process between contexts, so a sketch
that spins or crashes takes down only its slot). Its router serves the harness and the libraries from
memory and aborts and records everything else, WebSockets included (`route` does not see them). A render's
own files are served once and never cached, so the sketch cannot read the probe's one-time mark.

The harness trusts nothing in the sketch's realm: the finish mark and the picture are read in an isolated
world, errors and navigations come as DevTools events (renderers/watch.py). Faults the sketch causes come
back as `fault` ("navigation", "readback", "oversize"), never as exceptions.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import struct
import uuid
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from ground.records import RenderResult
from renderers import harness
from renderers.coverage import paint_coverage
from renderers.domains import Driver
from renderers.paper import on_paper
from renderers.watch import RenderWatch, kept


# After an uncaught error, how long the finish mark may still come: the old in-page probe's 50 ms, which
# let an error in a timer after a finished setup keep its picture.
ERROR_GRACE_S = 0.05
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_BLOCKED = 20


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header, without decoding a pixel; ValueError if it is no PNG."""
    if len(png) < 24 or png[:8] != PNG_SIGNATURE or png[12:16] != b"IHDR":
        raise ValueError("the readback is not a PNG")
    width, height = struct.unpack(">II", png[16:24])
    return width, height


class RendererLost(RuntimeError):
    """The slot's renderer process, its browser or the driver died under the render."""


@dataclass
class Outcome:
    """What the frame reported: the isolated world's readback plus the protocol's errors and attempts."""

    png: bytes | None
    width: int
    height: int
    reason: str | None
    errors: list[str]
    draw_ms: float | None
    blocked: list[str]
    fault: str | None = None
    fault_detail: str = ""

    def result(self, seed: int, render_ms: float) -> RenderResult:
        """The render's outcome as the wire type: its PNG on the paper (at most size x size) and the paint coverage."""
        png = on_paper(self.png) if self.png else None
        return RenderResult(
            ok=png is not None,
            png=png,
            width=self.width,
            height=self.height,
            seed=seed,
            coverage=paint_coverage(png) if png else None,
            finished=self.reason in ("setup", "draw"),
            errors=kept(self.errors),
            blocked_requests=kept(self.blocked),
            render_ms=render_ms,
            draw_ms=self.draw_ms,
            fault=self.fault,
            fault_detail=self.fault_detail,
        )


@dataclass
class Slot:
    """A context + host page on one browser; `renders` counts sketches run, for periodic recycling.

    It lives as long as its page, its browser (`browser_lost`, set when Chromium disconnects) and the driver (`driver`,
    whose `lost` is set when the Node process dies): `lost()` names the first of them that died, and every wait of a
    render ends with RendererLost when one does. `mounted` says whether the current render's sketch was handed to the
    page: before that, a render that fails did not run its sketch.
    """

    browser: Any
    context: Any
    page: Any
    libraries: dict[str, bytes]
    driver: Driver
    browser_lost: asyncio.Event
    watch: Any = None
    renders: int = 0
    crashed: bool = False
    mounted: bool = False
    _files: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    _once: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)
    _token: str = ""
    _frame: Any = None  # the current render's frame, as Playwright knows it
    _dead: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    async def open(cls, browser, libraries: dict[str, bytes], driver: Driver, browser_lost: asyncio.Event) -> Slot:
        context = await browser.new_context(viewport={"width": 700, "height": 700}, device_scale_factor=1)
        slot = cls(
            browser=browser,
            context=context,
            page=None,
            libraries=libraries,
            driver=driver,
            browser_lost=browser_lost,
        )
        js = "text/javascript; charset=utf-8"
        slot._files = {
            "/": (harness.HOST_HTML.encode(), "text/html"),
            **{path: (libraries[name], js) for name, path in harness.LIBRARY_PATHS.items()},
        }
        await context.route("**/*", slot._route)
        await context.route_web_socket("**/*", slot._refuse_web_socket)
        slot.page = await context.new_page()
        slot.page.on("crash", slot._on_crash)
        slot.watch = RenderWatch(await context.new_cdp_session(slot.page))
        await slot.watch.start()
        await slot.page.goto(harness.ORIGIN + "/", wait_until="load")
        return slot

    def _on_crash(self, _page) -> None:
        self.crashed = True
        self._dead.set()  # a crashed page never answers a pending protocol call: wake whoever waits on one

    def lost(self) -> str:
        """What died under this slot, or "" while its page, browser and driver all live."""
        if self.driver.lost.is_set():
            return "the Playwright driver died"
        if self.browser_lost.is_set() or not self.browser.is_connected():
            return "Chromium disconnected"
        return "the page's renderer crashed" if self.crashed else ""

    async def _until(self, awaitable) -> Any:
        """Await `awaitable` unless the page, its browser or the driver dies first; then raise RendererLost."""
        task = asyncio.ensure_future(awaitable)
        deaths = [asyncio.ensure_future(event.wait()) for event in (self._dead, self.browser_lost, self.driver.lost)]
        try:
            await asyncio.wait({task, *deaths}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for death in deaths:
                death.cancel()
            if not task.done():
                task.cancel()
        if self.lost():
            if task.done() and not task.cancelled():
                task.exception()  # failed with the death, which is what the caller hears: not an unread error
            raise RendererLost(self.lost())
        return task.result()

    async def _route(self, route) -> None:
        url = route.request.url
        path = url[len(harness.ORIGIN) :] if url.startswith(harness.ORIGIN + "/") else ""
        headers = {"Access-Control-Allow-Origin": "*"}
        if path in self._once:
            body, content_type = self._once.pop(path)
            headers["Cache-Control"] = "no-store"
        elif path in self._files:
            body, content_type = self._files[path]
        else:
            if self._owns(route.request):
                self._block(url)
            await self._answer(route.abort())
            return
        await self._answer(route.fulfill(status=200, body=body, content_type=content_type, headers=headers))

    async def _answer(self, reply, route: bool = True) -> None:
        """Send the router's reply; a frame or context closed meanwhile (a retired slot) needs none, and Playwright
        would otherwise print a traceback per request: a request flood printed 8,228 of them.

        A route's reply through a dead driver fails without Playwright counting the route as handled, and the handler
        would wait for that forever: a pending task that asyncio logs as an error when it is collected. So the
        context's routes are dropped first (ignoring their errors, Playwright's own way out) and the error is let
        through, which ends the handler quietly."""
        from playwright.async_api import Error as PlaywrightError

        try:
            await reply
        except PlaywrightError:
            if not (route and self.driver.lost.is_set()):
                return
            with suppress(PlaywrightError):
                await self.context.unroute_all(behavior="ignoreErrors")
            raise

    def _block(self, url: str) -> None:
        """Record a refused request; past the watcher's cap the render is a flood."""
        if len(self.blocked) < MAX_BLOCKED:
            self.blocked.append(self.watch.scrub(url, 200))
        else:
            self.watch.flood(f"more than {MAX_BLOCKED} network requests")

    def _owns(self, request) -> bool:
        """Whether `request` comes from the current render: a late one of an earlier frame is not its sketch's."""
        try:
            frame = request.frame
        except Exception:  # a worker's request has no frame; workers die with their frame
            return True
        if frame.is_detached() or frame == self.page.main_frame:
            return False
        while frame.parent_frame is not None and frame.parent_frame != self.page.main_frame:
            frame = frame.parent_frame
        return frame == self._frame or self._token in frame.url

    async def _refuse_web_socket(self, ws) -> None:
        self._block(ws.url)
        await self._answer(ws.close(code=1008, reason="network access is not allowed"), route=False)

    async def run(self, source: str, seed: int, size: int) -> Outcome:
        """Mount a fresh frame for `source` and wait until it has painted; the caller enforces the deadline."""
        self.renders += 1
        self.mounted = False
        self.blocked = []
        token = self._token = f"/r/{uuid.uuid4().hex}/"  # matches watch.TOKEN
        mark = "done:" + uuid.uuid4().hex + ":"
        js = "text/javascript; charset=utf-8"
        self._once = {
            token + "index.html": (harness.FRAME_HTML.encode(), "text/html"),
            token + "seed.js": (harness.seed_script(seed).encode(), js),
            token + "probe.js": (harness.probe_script(mark, size, source).encode(), js),
        }
        watch = self.watch
        watch.begin(token)
        self._frame = None
        await self._until(self.page.evaluate(harness.MOUNT_FRAME_JS, token + "index.html"))
        self.mounted = True
        await self._until(watch.world)
        self._frame = next((frame for frame in self.page.frames if token in frame.url), None)
        finished = asyncio.ensure_future(watch.evaluate(f"__wcWatch.finished({json.dumps(mark)})"))
        trouble = asyncio.ensure_future(watch.trouble.wait())
        try:
            await self._until(asyncio.wait({finished, trouble}, return_when=asyncio.FIRST_COMPLETED))
            if not finished.done() and not watch.navigations:
                await self._until(asyncio.wait({finished}, timeout=ERROR_GRACE_S))
        finally:
            finished.cancel()
            trouble.cancel()
        if finished.done() and not finished.cancelled():
            finished.exception()  # its world may have gone (a navigation): _read reports that, asyncio need not
        outcome = Outcome(None, 0, 0, None, watch.errors, None, [])
        if watch.navigations:
            outcome.fault, outcome.fault_detail = (
                "navigation",
                f"the sketch navigated its frame to {watch.navigations[0]}",
            )
        else:
            await self._read(outcome, mark, size)
        if watch.flooded and not outcome.fault:
            outcome.png, outcome.fault, outcome.fault_detail = None, "flood", watch.flooded
        outcome.errors = list(watch.errors)
        outcome.blocked = self.blocked + watch.attempts + outcome.blocked
        return outcome

    async def _read(self, outcome: Outcome, mark: str, size: int) -> None:
        """Fill `outcome` from the isolated world; what the sketch broke there is a `readback` fault, not a crash."""
        from playwright.async_api import Error as PlaywrightError

        try:
            state = await self._until(self.watch.evaluate(f"__wcWatch.read({json.dumps(mark)}, {int(size)})"))
            outcome.reason, outcome.draw_ms = state["reason"], state["drawMs"]
            outcome.width, outcome.height = state["w"], state["h"]
            self.watch.note_refused(state["policy"])
            hints = list(state["hints"]) + await self._until(self.watch.child_reports())
            outcome.blocked = [self.watch.scrub(str(hint), 200) for hint in hints]
            if state["refused"]:
                outcome.fault, outcome.fault_detail = (self.watch.scrub(str(part)) for part in state["refused"])
            elif state["oversize"]:
                outcome.fault = "oversize"
                outcome.fault_detail = f"the canvas is {state['w']}x{state['h']}; the limit is {size}x{size}"
            elif state["reason"] not in (None, "no setup or draw") and not state["canvas"]:
                outcome.fault = "readback"
                outcome.fault_detail = (
                    "the finish mark named no canvas in the document (p5's canvas was replaced or removed)"
                )
            elif state["png"]:
                png = base64.b64decode(state["png"].split(",", 1)[1], validate=True)
                if max(png_size(png)) > size:
                    raise ValueError(f"the PNG is {png_size(png)}, over {size}x{size}")
                outcome.png = png
        except RendererLost:
            raise
        except (PlaywrightError, RuntimeError, ValueError, binascii.Error, KeyError, TypeError, IndexError) as error:
            if self.lost():
                raise RendererLost(self.lost()) from error
            outcome.png, outcome.fault = None, "readback"
            outcome.fault_detail = self.watch.scrub(f"readback failed: {error}")

    async def close(self) -> None:
        await self.context.close()
