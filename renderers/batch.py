"""A synchronous front door for command-line tools: render a list of sketches on a browser pool it starts and stops."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ground.records import RenderResult
from ground.settings import RenderSettings
from renderers.browsers import BrowserPool


def render_many(
    sources: list[str],
    seed: int = 0,
    size: int = 600,
    deadline_s: float = 30.0,
    progress: Callable[[int, int, RenderResult], None] | None = None,
) -> list[RenderResult]:
    """Render every sketch with `seed` at `size`x`size` on a pool of the default render settings that lives for this
    call; results come back in input order.

    `progress(done, total, result)` is called as each render finishes, in completion order. Runs its own
    event loop, so call it from synchronous code only; async callers use BrowserPool directly.
    """
    return asyncio.run(_render_all(sources, seed, size, deadline_s, progress))


async def _render_all(sources, seed, size, deadline_s, progress) -> list[RenderResult]:
    async with BrowserPool.from_settings(RenderSettings(seed=seed, size=size, deadline_s=deadline_s)) as browsers:
        done = 0

        async def one(source: str) -> RenderResult:
            nonlocal done
            result = await browsers.render(source, seed=seed, size=size)
            done += 1
            if progress is not None:
                progress(done, len(sources), result)
            return result

        return list(await asyncio.gather(*(one(source) for source in sources)))
