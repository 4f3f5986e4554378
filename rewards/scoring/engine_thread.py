"""A process's scoring engines on an event loop of their own, for callers that are threads, not coroutines.

Prefect task threads come and go, and a Dask worker process has no loop at all, but Playwright and httpx clients
are bound to the loop that made them. So each process keeps one `EngineThread`: a private loop in a daemon
thread, one browser pool started on it (by the first caller, with that caller's render settings), and one
`ScoringEngine` per (scoring settings, run directory), all lending that pool. Any thread hands it a batch and
waits for the parts, or starts a prefetch; identical completions scored from two threads, or a prefetch and the
score that follows it, meet on the one loop and render once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ground.records import RewardParts
from ground.settings import RenderSettings, ScoringSettings
from rewards.scoring.scoring_engine import ScoringEngine


T = TypeVar("T")
# Closing browsers and clients takes a second or two; a minute means something hangs and the process should go on.
CLOSE_TIMEOUT_S = 60.0


class EngineThread:
    """One loop thread, one browser pool and the engines that share it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="scoring-engine", daemon=True).start()
        self.browsers: Any = None
        self.engines: dict[str, ScoringEngine] = {}
        self._browsers_lock: asyncio.Lock | None = None

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the engine loop, from any thread, and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def score(
        self,
        settings: ScoringSettings,
        run_dir: Path,
        completions: Sequence[str],
        seeds: Sequence[int],
        step: int | None,
        subjects: Sequence[str | None] | None = None,
    ) -> list[RewardParts]:
        """Score a batch on the engine loop and wait for the parts (`ScoringEngine.score`)."""
        return self.run(self._score(settings, Path(run_dir), completions, seeds, step, subjects))

    def prefetch(
        self, settings: ScoringSettings, run_dir: Path, completion: str, seed: int | None, subject: str | None
    ) -> concurrent.futures.Future[None]:
        """Start scoring one completion ahead on the engine loop (`ScoringEngine.prefetch`); returns at once."""
        return asyncio.run_coroutine_threadsafe(
            self._prefetch(settings, Path(run_dir), completion, seed, subject), self.loop
        )

    async def engine(self, settings: ScoringSettings, run_dir: Path) -> ScoringEngine:
        """The engine of (settings, run directory) on this loop, lending the process's browser pool."""
        browsers = await self.browser_pool(settings.render)
        key = f"{run_dir}\n{settings.model_dump_json()}"
        if key not in self.engines:
            self.engines[key] = ScoringEngine(settings, run_dir, browsers=browsers)
        return self.engines[key]

    async def _score(
        self,
        settings: ScoringSettings,
        run_dir: Path,
        completions: Sequence[str],
        seeds: Sequence[int],
        step: int | None,
        subjects: Sequence[str | None] | None,
    ) -> list[RewardParts]:
        engine = await self.engine(settings, run_dir)
        return await engine.score(completions, seeds, step, subjects)

    async def _prefetch(
        self, settings: ScoringSettings, run_dir: Path, completion: str, seed: int | None, subject: str | None
    ) -> None:
        engine = await self.engine(settings, run_dir)
        await engine.prefetch(completion, seed=seed, subject=subject)

    async def browser_pool(self, render: RenderSettings) -> Any:
        """The process's browser pool, started by the first caller with that caller's render settings."""
        from renderers import BrowserPool

        self._browsers_lock = self._browsers_lock or asyncio.Lock()
        async with self._browsers_lock:
            if self.browsers is None:
                browsers = BrowserPool.from_settings(render)
                await browsers.start()
                self.browsers = browsers
        return self.browsers

    def close(self) -> None:
        async def shutdown() -> None:
            for engine in self.engines.values():
                await engine.aclose()
            if self.browsers is not None:
                await self.browsers.close()

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(timeout=CLOSE_TIMEOUT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.engines.clear()
        self.browsers = None


_thread: EngineThread | None = None
_thread_lock = threading.Lock()


def engine_thread() -> EngineThread:
    """This process's engine thread, started on first use (a Dask worker starts its own the first time it scores)."""
    global _thread
    with _thread_lock:
        if _thread is None:
            _thread = EngineThread()
        return _thread


def close_engine_thread() -> None:
    """Close the engines and the browser pool and stop the loop; idempotent. The next `engine_thread()` starts afresh."""
    global _thread
    with _thread_lock:
        if _thread is not None:
            _thread.close()
            _thread = None


def engine_thread_running() -> bool:
    """Whether this process has started an engine thread (the Dask test asks each worker)."""
    return _thread is not None
