"""The renderer's failure domains, and the evidence that decides whether a sketch broke the one it lost.

A render runs in three nested failure domains: its page's renderer process (one slot), its browser (Chromium and
its GPU process, every slot on it) and the driver (Playwright's Node process, every browser). When one dies under a
render, or the renderer stops answering, the render is `Broken`: no verdict, since a sketch that did nothing wrong
loses its renderer when a neighbour, the machine or an operator kills it. The evidence is a second run: the pool is
made whole (a new driver, browsers and pages as needed), and the sketch runs again on a fresh page *alone*, with no
other render in flight (`Turns.alone`), so nothing else can have broken that one. If it runs, its result is the
verdict; if it breaks the fresh renderer too, it broke it itself, and `Broken.verdict` is its fault. What the
error message says decides nothing. A render whose sketch never reached its page (the domain was already dead when
it was taken) is no suspect: it waits for the repair and runs again among the others.

The driver's death is the one Playwright does not report: it rejects every call in flight and every later one with
`TargetClosedError`, but `Browser.is_connected()` stays True and no public event fires, so a pool that trusts it
keeps handing out pages of a dead connection (the published reproduction lost two 14-hour runs to such a cached
connection). `Driver.lost` is set the moment the connection closes, from Playwright's own close event, which only its
internals expose: read here and nowhere else, for the pinned version (`PLAYWRIGHT`), refused on any other.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Literal

from ground.records import RenderResult
from renderers.watch import kept


# The version whose internals `_watch` reads: the connection's "close" event and the transport's error future.
PLAYWRIGHT = "1.65.2"
_generations = itertools.count(1)


class Driver:
    """One started Playwright driver: `playwright` to launch browsers with, `lost` set once it has died, and a
    `generation` that no later driver shares (a page of an earlier one belongs to a dead connection)."""

    def __init__(self, manager: Any, playwright: Any) -> None:
        self.manager, self.playwright = manager, playwright
        self.lost = asyncio.Event()
        self.generation = next(_generations)

    @classmethod
    async def start(cls) -> Driver:
        from playwright.async_api import async_playwright

        found = version("playwright")
        if found != PLAYWRIGHT:
            raise RuntimeError(
                f"renderers/domains.py watches Playwright {PLAYWRIGHT}'s connection; this is {found}: check that "
                "`Connection` still emits `close` and the transport still has `on_error_future`, then update PLAYWRIGHT"
            )
        manager = async_playwright()
        driver = cls(manager, await manager.start())
        driver._watch()
        return driver

    def _watch(self) -> None:
        self.playwright._impl_obj._connection.on("close", self.lost.set)
        # The transport keeps the reader's "connection closed" error for no one: read it, or asyncio logs it as an
        # error when the future is collected.
        self.manager._client._transport.on_error_future.add_done_callback(
            lambda future: future.cancelled() or future.exception()
        )

    async def stop(self) -> None:
        await self.playwright.stop()


# Crash: the renderer process, its browser or the driver died; hang: the renderer stopped answering; harness: the
# harness failed with all of them alive.
Kind = Literal["crash", "hang", "harness"]


@dataclass
class Broken:
    """A render that ended without a verdict. `kind`: its renderer, browser or driver died (`crash`), its renderer
    stopped answering (`hang`), or the harness failed with all of them alive (`harness`). `ran`: its sketch reached the
    page. `what` says what happened, `blocked` what the page had attempted until then."""

    kind: Kind
    what: str
    ran: bool
    blocked: list[str]

    def verdict(self, seed: int, render_ms: float) -> RenderResult:
        """The result of a sketch that broke a fresh renderer a second time, alone: its own fault."""
        again = f"{self.what}; it did again with the sketch alone on a fresh renderer"
        base = RenderResult(ok=False, seed=seed, render_ms=render_ms, blocked_requests=kept(self.blocked))
        if self.kind == "crash":
            return base.model_copy(update={"crashed": True, "errors": [again]})
        if self.kind == "hang":
            return base.model_copy(update={"timed_out": True, "errors": [again]})
        return base.model_copy(update={"fault": "harness", "fault_detail": again})


class Turns:
    """Renders share the pool; a second run of a broken render waits until none is in flight, and runs alone.

    While a lone run waits, new renders wait for it (it would otherwise never find the pool empty)."""

    def __init__(self) -> None:
        self._sharing = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._open = asyncio.Event()
        self._open.set()
        self._waiting = 0
        self._alone = asyncio.Lock()

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        while not self._open.is_set():
            await self._open.wait()
        self._sharing += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._sharing -= 1
            if self._sharing == 0:
                self._idle.set()

    @asynccontextmanager
    async def alone(self) -> AsyncIterator[None]:
        self._waiting += 1
        self._open.clear()
        try:
            async with self._alone:
                await self._idle.wait()
                yield
        finally:
            self._waiting -= 1
            if self._waiting == 0:
                self._open.set()
