"""A pool of warm headless Chromium browsers that renders untrusted sketches under a hard deadline.

Launch flags: WebGL through ANGLE on Mesa's llvmpipe with software Canvas2D. The published recipe's
SwiftShader flags make Chromium treat SwiftShader as a GPU and rasterise p5.brush's Canvas2D fill masks
through it, which costs 15-80 s per sketch; this recipe paints the same pictures in about a second
(docs/rendering.md has the measurements).

Sketch faults (a timeout, a crashed page, script errors, a navigation, a broken readback, an oversize
canvas, any other error the sketch provokes in the harness while its browser lives) come back in the
RenderResult; only faults of the renderer itself (no browser, a browser that died) raise RendererUnavailable.
Every render returns its slot or retires it, whatever happens, a caller's cancellation included. A retired
slot is closed and replaced in the background, so the caller gets its result at the deadline, not after the
clean-up. Chromium runs in an empty network namespace unless `isolate_network=False` (renderers/isolation.py).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Any

from ground.records import RenderResult
from renderers.assets import LIBRARIES, library
from renderers.isolation import offline_launch
from renderers.page import PageCrashed, Slot
from renderers.watch import kept, scrubbed


# Debian's chromium (`make setup`); WATERCOLOUR_CHROMIUM points elsewhere (the GPU box's bundled launcher).
CHROMIUM = os.environ.get("WATERCOLOUR_CHROMIUM", "/usr/bin/chromium")

FAST_FLAGS = [
    "--use-gl=angle",
    "--use-angle=gl-egl",
    "--ignore-gpu-blocklist",
    "--disable-accelerated-2d-canvas",
]
# Shared by every configuration: no background traffic; a dead proxy and a resolver that resolves nothing,
# so a request that slipped past the router still goes nowhere; WebRTC may not send UDP around the proxy.
COMMON_FLAGS = [
    "--no-sandbox",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--proxy-server=127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    # Keep the sketch's sandboxed frame in its host page's renderer process (Chromium 156 isolates sandboxed
    # frames by default): the slot's DevTools session then sees the frame's errors, navigations and isolated
    # world from its first script on, and no renderer process is spawned per render.
    "--disable-features=IsolateSandboxedIframes",
]
# Seconds a dead slot's context gets to close before its whole browser is killed instead.
CLOSE_GRACE_S = 5.0


class RendererUnavailable(RuntimeError):
    """The renderer itself failed (no browser, a browser that died for reasons not the sketch's)."""


@dataclass
class BrowserPool:
    """Renders sketches on `browsers` warm Chromium processes, each running up to `pages_per_browser` slots.

    Use as `async with BrowserPool() as browsers: result = await browsers.render(source, seed=0, size=600)`.
    The defaults fill a 2-core machine: one render keeps ~1.8 cores busy, and a second slot per browser fills
    the gaps while the other waits on the GPU process (docs/rendering.md, "pool size").
    """

    browsers: int = field(default_factory=lambda: os.cpu_count() or 1)
    pages_per_browser: int = 2
    deadline_s: float = 30.0
    heap_mb: int = 512
    flags: list[str] = field(default_factory=lambda: list(FAST_FLAGS))
    executable: str = CHROMIUM
    recycle_after: int = 200  # renders per slot; Chromium's RSS grows ~2.9 MB per render in one page
    isolate_network: bool = True  # False: the request router alone stands between a sketch and the network

    def __post_init__(self) -> None:
        self._playwright: Any = None
        self._browsers: list[Any] = []
        self._locks: list[asyncio.Lock] = []
        self._free: asyncio.Queue[tuple[int, Slot | None]] = asyncio.Queue()
        self._cleanups: set[asyncio.Task] = set()
        self._libraries = {name: library(name)[1] for name in LIBRARIES}
        self._launcher: tuple[str, dict[str, str]] = (self.executable, {})

    async def __aenter__(self) -> BrowserPool:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def start(self) -> None:
        try:
            from playwright.async_api import async_playwright
        except ImportError as error:
            raise RendererUnavailable(
                f"Playwright is not installed in this Python ({error}): run `make setup`"
            ) from None
        if not os.path.exists(self.executable):
            raise RendererUnavailable(f"Chromium not found at {self.executable}: run `make setup`")
        if self.isolate_network:
            try:
                self._launcher = offline_launch(self.executable)
            except RuntimeError as error:
                raise RendererUnavailable(str(error)) from error
        self._playwright = await async_playwright().start()
        self._locks = [asyncio.Lock() for _ in range(self.browsers)]
        self._browsers = list(await asyncio.gather(*(self._launch() for _ in range(self.browsers))))
        slots = await asyncio.gather(
            *(self._open_slot(i) for i in range(self.browsers) for _ in range(self.pages_per_browser))
        )
        for slot in slots:
            self._free.put_nowait((self._browsers.index(slot.browser), slot))

    async def close(self) -> None:
        await asyncio.gather(*self._cleanups, return_exceptions=True)
        for browser in self._browsers:
            await browser.close()
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None

    async def _launch(self) -> Any:
        args = COMMON_FLAGS + self.flags + [f"--js-flags=--max-old-space-size={self.heap_mb}"]
        # One llvmpipe thread per GPU process: the pool already keeps every core busy with its own browsers,
        # and LP_NUM_THREADS=1 measured as fast or faster at 2x2 (docs/rendering.md).
        executable, extra_env = self._launcher
        env = {**os.environ, "LP_NUM_THREADS": "1", **extra_env}
        try:
            return await self._playwright.chromium.launch(
                executable_path=executable, headless=True, args=args, env=env
            )
        except Exception as error:
            raise RendererUnavailable(
                f"Chromium at {self.executable} failed to launch ({error}): run `make setup`"
            ) from error

    async def _open_slot(self, index: int) -> Slot:
        """A new slot on browser `index`, relaunching that browser first if it has died."""
        async with self._locks[index]:
            if not self._browsers[index].is_connected():
                self._browsers[index] = await self._launch()
            browser = self._browsers[index]
        try:
            return await Slot.open(browser, self._libraries)
        except Exception as error:
            raise RendererUnavailable(f"could not open a page in Chromium: {error}") from error

    async def _take(self) -> tuple[int, Slot]:
        """A healthy slot: a free one, or a replacement for one whose browser or page died while it waited."""
        index, slot = await self._free.get()
        if slot is not None and not slot.crashed and slot.browser.is_connected():
            return index, slot
        try:
            return index, await self._open_slot(index)
        except RendererUnavailable:
            self._free.put_nowait((index, None))
            raise

    def _retire(self, index: int, slot: Slot) -> None:
        """Close `slot` and open its replacement in the background; a spinning page can take seconds to close."""

        async def replace() -> None:
            try:
                await asyncio.wait_for(slot.close(), timeout=CLOSE_GRACE_S)
            except Exception:
                await slot.browser.close()  # the renderer ignored us: kill the whole browser, relaunched below
            try:
                self._free.put_nowait((index, await self._open_slot(index)))
            except RendererUnavailable:
                self._free.put_nowait((index, None))  # the next render retries the launch and reports it

        task = asyncio.get_running_loop().create_task(replace())
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    async def render(self, source: str, seed: int = 0, size: int = 600) -> RenderResult:
        """Run `source` in a fresh frame and read its WEBGL canvas back at `size`x`size` pixels at most."""
        assert self._playwright is not None, "BrowserPool.start() was not called"
        for attempt in range(2):
            index, slot = await self._take()
            started = time.perf_counter()
            try:
                outcome = await asyncio.wait_for(slot.run(source, seed, size), timeout=self.deadline_s)
                result = outcome.result(seed, _ms(started))
            except TimeoutError:
                self._retire(index, slot)
                reason = f"the sketch did not finish within the {self.deadline_s:g} s deadline"
                return _failure(slot, seed, started, timed_out=True, errors=[reason])
            except BaseException as error:  # the slot's state is unknown after any other exit: never reuse it
                self._retire(index, slot)
                if not isinstance(error, Exception):
                    raise  # cancelled by the caller
                if not slot.browser.is_connected():
                    if attempt == 0:
                        continue  # the browser died under us, not the sketch: once more on a fresh one
                    raise RendererUnavailable(
                        "Chromium died twice in a row while rendering: check memory and `dmesg`"
                    ) from error
                if _is_crash(slot, error):
                    reason = f"the page crashed (heap cap {self.heap_mb} MB, or a runaway sketch): {error}"
                    return _failure(slot, seed, started, crashed=True, errors=[scrubbed(reason)])
                # The browser lives and its page did not crash, so the sketch, the only input that differs
                # between renders, broke the harness (a frame it tore down, a reply it corrupted): its fault.
                # A bug of the harness itself would fail good sketches too, which the tests render.
                return _failure(
                    slot, seed, started, fault="harness", fault_detail=scrubbed(f"{type(error).__name__}: {error}")
                )
            if slot.renders >= self.recycle_after or result.fault == "flood":  # a flooding page may flood on
                self._retire(index, slot)
            else:
                self._free.put_nowait((index, slot))
            return result
        raise AssertionError("unreachable: the second attempt returns or raises")


def _failure(slot: Slot, seed: int, started: float, **update) -> RenderResult:
    """A render that ended without an outcome, with the attempts the slot saw until then."""
    blocked = kept(slot.blocked + (slot.watch.attempts if slot.watch else []))
    return RenderResult(ok=False, seed=seed, blocked_requests=blocked, render_ms=_ms(started), **update)


def _is_crash(slot: Slot, error: Exception) -> bool:
    from playwright.async_api import Error as PlaywrightError

    if slot.crashed or isinstance(error, PageCrashed):
        return True
    message = str(error).lower()
    return isinstance(error, PlaywrightError) and any(word in message for word in ("crash", "detached", "closed"))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)
