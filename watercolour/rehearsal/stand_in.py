"""What a rehearsal scores in place of a random policy's tokens: the bundled pool's sketches.

A random policy writes token soup, which the gate refuses at once, so renders, the aesthetic scorer and the judge
would cost nothing and the rehearsal would promise a run it cannot deliver. `PoolSketches` turns each completion
into one of the bundled pool's sketches, chosen by the completion's hash and marked with it, so no two rollouts
share a render, nothing comes from the cache, and every service is asked what a trained policy's paintings would
ask it. Every rehearsal output says so.
"""

from __future__ import annotations

import zlib
from functools import cached_property
from typing import Any

from ground.reference_pool import BUNDLED_POOL
from rewards.length import completion_text


class PoolSketches:
    """A completion -> the text a rehearsal scores: a pool sketch, marked with the completion's hash. Picklable."""

    __name__ = "pool_sketches"

    @cached_property
    def sketches(self) -> list[str]:
        return [path.read_text() for path in sorted(BUNDLED_POOL.glob("*.js"))]

    def __call__(self, completion: Any) -> str:
        text = completion_text(completion)
        mark = zlib.crc32(text.encode())
        sketch = self.sketches[mark % len(self.sketches)]
        return f"```javascript\n// rollout {mark:08x}\n{sketch.strip()}\n```"
