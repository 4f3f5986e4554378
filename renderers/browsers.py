"""A pool of warm headless Chromium browsers that renders untrusted sketches under a hard deadline.

Launch flags: WebGL through ANGLE on Mesa's llvmpipe with software Canvas2D. The published recipe's
SwiftShader flags make Chromium treat SwiftShader as a GPU and rasterise p5.brush's Canvas2D fill masks
through it, which costs 15-80 s per sketch; this recipe paints the same pictures in about a second
(docs/rendering.md has the measurements).

Sketch faults (a timeout, script errors, a navigation, a broken readback, an oversize canvas, a flood, a refusal)
come back in the RenderResult. A render whose renderer process, browser or driver died or stopped answering under it
is no verdict: the pool is made whole and the sketch runs again alone on a fresh page, and only if it breaks that one
too is it the sketch's fault (renderers/domains.py). RendererUnavailable is raised when the pool cannot be made whole
(no Chromium, a launch that fails, no network namespace). Every render returns its slot or retires it, whatever
happens, a caller's cancellation included. A retired slot is closed and replaced in the background, so the caller
gets its result at the deadline, not after the clean-up. Chromium runs in an empty network namespace unless
`isolate_network=False` (renderers/isolation.py).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Coroutine
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from ground.records import RenderResult
from ground.settings import RenderSettings
from renderers.assets import LIBRARIES, library
from renderers.domains import Broken, Driver, Kind, Turns
from renderers.isolation import offline_launch
from renderers.page import Slot
from renderers.watch import kept


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
# Seconds a renderer gets to answer once its script is stopped, before it counts as hung: a spinning sketch's answers
# in ~12 ms; this leaves room for a box under a load of 15.
PROBE_S = 5.0


class RendererUnavailable(RuntimeError):
    """The renderer itself failed and cannot be made whole (no browser, a launch that fails): never the sketch's fault."""


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

    @classmethod
    def from_settings(cls, render: RenderSettings) -> BrowserPool:
        """The pool a run's render settings describe (browsers, pages per browser, deadline), not yet started.

        Whoever calls this owns the pool: it starts it and closes it (`async with`, or `start()` then `close()` in a
        `finally`). A pool lent to another object (a ScoringEngine's `browsers`, a Generator's renderer) stays its
        lender's to close; a process-wide pool (`rewards.scoring.engine_thread`) is closed by its thread.
        """
        return cls(browsers=render.browsers, pages_per_browser=render.pages_per_browser, deadline_s=render.deadline_s)

    def __post_init__(self) -> None:
        self._driver: Driver | None = None
        self._browsers: list[Any] = []  # None in a place whose browser is yet to be launched
        self._browser_lost: list[asyncio.Event] = []
        self._locks: list[asyncio.Lock] = []
        self._free: asyncio.Queue[tuple[int, Slot | None]] = asyncio.Queue()
        self._cleanups: set[asyncio.Task] = set()  # slots being replaced
        self._closing: set[asyncio.Task] = set()  # browsers given up, closing
        self._turns = Turns()
        self._libraries = {name: library(name)[1] for name in LIBRARIES}
        self._launcher: tuple[str, dict[str, str]] = (self.executable, {})

    async def __aenter__(self) -> BrowserPool:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def start(self) -> None:
        try:
            import playwright  # noqa: F401
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
        self._locks = [asyncio.Lock() for _ in range(self.browsers)]
        await self._start_driver()
        slots = await asyncio.gather(
            *(self._open_slot(i) for i in range(self.browsers) for _ in range(self.pages_per_browser))
        )
        for slot in slots:
            self._free.put_nowait((self._browsers.index(slot.browser), slot))

    async def close(self) -> None:
        await asyncio.gather(*self._cleanups, *self._closing, return_exceptions=True)
        for browser in self._browsers:
            with suppress(Exception):  # none there, or one of a dead driver: nothing to close
                await browser.close()
        if self._driver is not None:
            await self._driver.stop()
            self._driver = None

    async def _start_driver(self) -> None:
        """A new driver and a new browser in every place: what a pool whose driver died needs. A place whose launch
        fails stays empty, and the next slot opened there launches again."""
        try:
            self._driver = await Driver.start()
        except Exception as error:
            raise RendererUnavailable(f"Playwright's driver failed to start ({error}): run `make setup`") from error
        self._browsers = [None] * self.browsers
        self._browser_lost = [asyncio.Event() for _ in range(self.browsers)]
        await asyncio.gather(*(self._relaunch(index) for index in range(self.browsers)))

    async def _relaunch(self, index: int) -> None:
        async with self._locks[index]:
            self._browsers[index] = await self._launch(index)

    async def _launch(self, index: int) -> Any:
        assert self._driver is not None
        args = COMMON_FLAGS + self.flags + [f"--js-flags=--max-old-space-size={self.heap_mb}"]
        # One llvmpipe thread per GPU process: the pool already keeps every core busy with its own browsers,
        # and LP_NUM_THREADS=1 measured as fast or faster at 2x2 (docs/rendering.md).
        executable, extra_env = self._launcher
        env = {**os.environ, "LP_NUM_THREADS": "1", **extra_env}
        try:
            browser = await self._driver.playwright.chromium.launch(
                executable_path=executable, headless=True, args=args, env=env
            )
        except Exception as error:
            raise RendererUnavailable(
                f"Chromium at {self.executable} failed to launch ({error}): run `make setup`"
            ) from error
        lost = self._browser_lost[index] = asyncio.Event()
        browser.on("disconnected", lambda _: lost.set())
        return browser

    async def _open_slot(self, index: int) -> Slot:
        """A new slot on browser `index`, relaunching that browser first if it has died."""
        assert self._driver is not None
        async with self._locks[index]:
            known = self._browsers[index]
            if known is None or not known.is_connected() or self._browser_lost[index].is_set():
                self._browsers[index] = await self._launch(index)
            browser, lost = self._browsers[index], self._browser_lost[index]
        try:
            return await Slot.open(browser, self._libraries, self._driver, lost)
        except Exception as error:
            raise RendererUnavailable(f"could not open a page in Chromium: {error}") from error

    def _alive(self, slot: Slot | None) -> bool:
        return slot is not None and slot.driver is self._driver and not slot.lost()

    async def _take(self) -> tuple[int, Slot | None]:
        """A free slot, or a new one in the place of one whose page, browser or driver died while it waited; None in
        the slot when none can be opened now (the place is kept)."""
        index, slot = await self._free.get()
        if self._alive(slot):
            return index, slot
        try:
            return index, await self._open_slot(index)
        except RendererUnavailable:
            return index, None

    def _retire(self, index: int, slot: Slot, kill: bool = False) -> None:
        """Close `slot` (with `kill`, give up its whole browser) and open its replacement in the background; a spinning
        page can take seconds to close."""

        async def replace() -> None:
            try:
                if kill:
                    raise TimeoutError
                await asyncio.wait_for(slot.close(), timeout=CLOSE_GRACE_S)
            except Exception:
                self._abandon(index, slot.browser)  # the renderer ignored us: the whole browser goes
            try:
                replacement: Slot | None = await self._open_slot(index)
            except RendererUnavailable:
                replacement = None  # the next render, or the next repair, retries the launch
            self._free.put_nowait((index, replacement))

        self._background(replace(), self._cleanups)

    def _abandon(self, index: int, browser: Any) -> None:
        """Give `browser` up: its slots count as lost, the next slot opened in its place relaunches it, and it is
        closed in the background (one with a stopped renderer took 30 s to close, which the repair need not wait)."""
        if self._browsers[index] is browser:
            self._browser_lost[index].set()

        async def close() -> None:
            with suppress(Exception):
                await browser.close()

        self._background(close(), self._closing)

    def _background(self, work: Coroutine[Any, Any, None], tasks: set[asyncio.Task]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _make_whole(self) -> None:
        """Run alone: every retired slot back, a new driver if it died, and every free slot alive (relaunching the
        browsers that died); RendererUnavailable if that cannot be done."""
        await asyncio.gather(*self._cleanups, return_exceptions=True)
        assert self._driver is not None
        if self._driver.lost.is_set():
            with suppress(Exception):
                await asyncio.wait_for(self._driver.stop(), CLOSE_GRACE_S)
            await self._start_driver()
        places = [self._free.get_nowait() for _ in range(self._free.qsize())]
        try:
            for position, (index, slot) in enumerate(places):
                if not self._alive(slot):
                    places[position] = (index, await self._open_slot(index))
        finally:
            for place in places:
                self._free.put_nowait(place)

    async def _answers(self, slot: Slot, stop: bool) -> bool:
        """Whether the slot's renderer answers (with `stop`, once the script it runs is stopped). A sketch that spins is
        stopped by V8's termination and its page answers in milliseconds; a renderer that is stopped (SIGSTOP) or gone
        does not. An evaluation the termination ended is an answer too."""
        from playwright.async_api import Error as PlaywrightError

        session = slot.watch.session
        try:
            async with asyncio.timeout(PROBE_S):
                if stop:
                    await session.send("Runtime.terminateExecution")
                with suppress(PlaywrightError):
                    await session.send("Runtime.evaluate", {"expression": "1"})
        except (TimeoutError, PlaywrightError):
            return False
        return not slot.lost()

    async def render(self, source: str, seed: int = 0, size: int = 600) -> RenderResult:
        """Run `source` in a fresh frame and read its WEBGL canvas back at `size`x`size` pixels at most."""
        assert self._driver is not None, "BrowserPool.start() was not called"
        started = time.perf_counter()
        for _ in range(2):
            async with self._turns.shared():
                first = await self._attempt(source, seed, size)
            if not isinstance(first, Broken):
                return first
            async with self._turns.alone():
                await self._make_whole()
                if not first.ran:
                    continue  # its sketch never reached a page: it runs again among the others
                second = await self._attempt(source, seed, size)
                if isinstance(second, Broken):
                    await self._make_whole()  # the next render starts on a whole pool
            if isinstance(second, Broken) and second.ran:
                return second.verdict(seed, _ms(started))  # it broke a fresh renderer alone: its own doing
            if isinstance(second, Broken):
                break
            return second
        raise RendererUnavailable(
            "the renderer was made whole and a page of it still failed before the sketch ran: check memory and `dmesg`"
        )

    async def _attempt(self, source: str, seed: int, size: int) -> RenderResult | Broken:
        """One run of `source` on a slot: its result, or what broke under it (the slot is retired then)."""
        index, slot = await self._take()
        if slot is None:
            self._free.put_nowait((index, None))
            return Broken("crash", "no page could be opened", ran=False, blocked=[])
        started = time.perf_counter()
        try:
            outcome = await asyncio.wait_for(slot.run(source, seed, size), timeout=self.deadline_s)
            result = outcome.result(seed, _ms(started))
        except TimeoutError:
            if slot.lost():
                self._retire(index, slot)
                return self._broken(slot, "crash", slot.lost())
            if await self._answers(slot, stop=True):  # the sketch ran past the deadline and its renderer answers
                self._retire(index, slot)
                reason = f"the sketch did not finish within the {self.deadline_s:g} s deadline"
                return _failure(slot, seed, started, timed_out=True, errors=[reason])
            self._retire(index, slot, kill=True)  # a fresh browser for the next run: the GPU process may be stuck too
            return self._broken(slot, "hang", f"the renderer stopped answering ({slot.lost() or 'no reply'})")
        except BaseException as error:  # the slot's state is unknown after any other exit: never reuse it
            self._retire(index, slot)
            if not isinstance(error, Exception):
                raise  # cancelled by the caller
            if slot.lost():
                return self._broken(slot, "crash", slot.lost())
            kind: Kind = "harness" if await self._answers(slot, stop=True) else "hang"
            return self._broken(slot, kind, slot.watch.scrub(f"{type(error).__name__}: {error}"))
        if result.fault == "readback" and (slot.lost() or not await self._answers(slot, stop=False)):
            self._retire(index, slot)  # the readback failed because its renderer went, not because of the sketch
            return self._broken(slot, "crash", slot.lost() or "the renderer stopped answering after the readback")
        if slot.renders >= self.recycle_after or result.fault == "flood":  # a flooding page may flood on
            self._retire(index, slot)
        else:
            self._free.put_nowait((index, slot))
        return result

    def _broken(self, slot: Slot, kind: Kind, what: str) -> Broken:
        blocked = slot.blocked + (slot.watch.attempts if slot.watch else [])
        return Broken(kind, what, ran=slot.mounted, blocked=blocked)


def _failure(slot: Slot, seed: int, started: float, **update) -> RenderResult:
    """A render that ended without an outcome, with the attempts the slot saw until then."""
    blocked = kept(slot.blocked + (slot.watch.attempts if slot.watch else []))
    return RenderResult(ok=False, seed=seed, blocked_requests=blocked, render_ms=_ms(started), **update)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)
