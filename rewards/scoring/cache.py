"""The content cache of a run (`run_dir/cache/`): renders, aesthetic scores and judge verdicts, keyed by content.

A key is (sketch hash, render seed, canvas size, backend id), plus, for the judge, whatever picks the references
(the group seed and the pool). GRPO policies repeat themselves, and a resumed run replays the step it crashed in;
neither should pay for a render or a remote call twice. Every file is written to a temporary name and moved into
place with `os.replace`, so a reader sees a whole entry or none, and a crash mid-write leaves only a stray
`*.tmp` that no lookup ever reads.

Layout: `render/<digest>.json` (the render summary) next to `render/<digest>.png`; `terms/<term>/<digest>.json` for
each service term (the aesthetic score, the judge's verdict). Each JSON keeps its key in clear so a person can tell
what an entry is.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from ground.files import write_atomic
from ground.records import RenderResult, sketch_hash


if TYPE_CHECKING:
    from rewards.gate import Renderer


Model = TypeVar("Model", bound=BaseModel)
# What kind of entry: "terms/<term name>" for a service term's answers (renders have their own methods).
Kind = str


@dataclass(frozen=True)
class ContentKey:
    """What a cached result depends on; `extra` carries the judge's reference draw."""

    sketch_hash: str
    seed: int
    size: int
    backend: str
    extra: str = ""

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:32]


class ContentCache:
    """Render, score and verdict entries of one run, on disk."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def load_render(self, key: ContentKey) -> RenderResult | None:
        summary_path = self.root / "render" / f"{key.digest}.json"
        if not summary_path.exists():
            return None
        result = RenderResult.model_validate(json.loads(summary_path.read_text())["value"])
        png_path = summary_path.with_suffix(".png")
        # The PNG goes down before its summary, so a summary always has its PNG when the render had one.
        result.png = png_path.read_bytes() if png_path.exists() else None
        return result

    def store_render(self, key: ContentKey, result: RenderResult) -> None:
        summary_path = self.root / "render" / f"{key.digest}.json"
        if result.png is not None:
            write_atomic(summary_path.with_suffix(".png"), result.png)
        write_atomic(summary_path, _entry(key, result.summary()))

    def load(self, kind: Kind, key: ContentKey, model: type[Model]) -> Model | None:
        path = self.root / kind / f"{key.digest}.json"
        if not path.exists():
            return None
        return model.model_validate(json.loads(path.read_text())["value"])

    def store(self, kind: Kind, key: ContentKey, value: BaseModel) -> None:
        write_atomic(self.root / kind / f"{key.digest}.json", _entry(key, value.model_dump(mode="json")))


def _entry(key: ContentKey, value: dict) -> bytes:
    return json.dumps({"key": asdict(key), "value": value}, indent=1).encode()


class CachedRenderer:
    """A renderer that answers from the cache first; hand it to the gate in place of the browser pool.

    Sketch faults (timeouts, crashes, errors) are cached like any other result: they are properties of the
    sketch. Infrastructure faults raise from the browser pool and leave nothing behind.
    """

    def __init__(self, browsers: Renderer, cache: ContentCache, size: int, renderer_id: str) -> None:
        self.browsers = browsers
        self.cache = cache
        self.size = size
        self.renderer_id = renderer_id
        self.renders = 0
        self.hits = 0
        self._in_flight: dict[ContentKey, asyncio.Future[RenderResult]] = {}

    def key(self, source: str, seed: int) -> ContentKey:
        return ContentKey(sketch_hash(source), seed, self.size, self.renderer_id)

    async def render(self, source: str, seed: int = 0) -> RenderResult:
        key = self.key(source, seed)
        cached = self.cache.load_render(key)
        if cached is None and key in self._in_flight:
            # The same sketch twice in one batch (a policy at low entropy repeats itself): render it once.
            cached = await asyncio.shield(self._in_flight[key])
        if cached is not None:
            self.hits += 1
            return cached
        self._in_flight[key] = asyncio.ensure_future(self.browsers.render(source, seed=seed))
        try:
            result = await self._in_flight[key]
            self.renders += 1
            self.cache.store_render(key, result)
        finally:
            del self._in_flight[key]
        return result
