"""The content cache: hits return what was stored, keys separate what they must, writes are atomic."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from PIL import Image

from ground.files import write_atomic
from ground.records import AestheticScore, Comparison, JudgeVerdict, RenderResult
from rewards.scoring.cache import CachedRenderer, ContentCache, ContentKey


def png_bytes(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, format="PNG")
    return buffer.getvalue()


class CountingRenderer:
    """A renderer that draws a flat square and counts how often it was asked to."""

    def __init__(self) -> None:
        self.calls = 0

    async def render(self, source: str, seed: int = 0) -> RenderResult:
        self.calls += 1
        png = png_bytes((len(source) % 256, seed % 256, 90))
        return RenderResult(ok=True, png=png, width=8, height=8, seed=seed, coverage=1.0, finished=True)


def test_render_round_trips_with_its_png(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path)
    key = ContentKey("abc", 0, 600, "p5@x")
    result = RenderResult(ok=True, png=png_bytes((200, 100, 50)), width=8, height=8, coverage=0.4, errors=["warn"])
    assert cache.load_render(key) is None
    cache.store_render(key, result)
    assert cache.load_render(key) == result


def test_failed_render_without_png_is_cached_too(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path)
    key = ContentKey("abc", 0, 600, "p5@x")
    cache.store_render(key, RenderResult(ok=False, timed_out=True, render_ms=30000.0))
    loaded = cache.load_render(key)
    assert loaded is not None and loaded.timed_out and loaded.png is None


def test_every_part_of_the_key_separates_entries(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path)
    base = ContentKey("abc", 0, 600, "hpsv3:1", "group_seed=1")
    cache.store("aesthetic", base, AestheticScore(score=0.7, raw=3.4, backend="hpsv3:1"))
    variants = [
        ContentKey("abd", 0, 600, "hpsv3:1", "group_seed=1"),
        ContentKey("abc", 1, 600, "hpsv3:1", "group_seed=1"),
        ContentKey("abc", 0, 448, "hpsv3:1", "group_seed=1"),
        ContentKey("abc", 0, 600, "offline-stats", "group_seed=1"),
        ContentKey("abc", 0, 600, "hpsv3:1", "group_seed=2"),
    ]
    assert cache.load("aesthetic", base, AestheticScore) == AestheticScore(score=0.7, raw=3.4, backend="hpsv3:1")
    assert all(cache.load("aesthetic", key, AestheticScore) is None for key in variants)
    assert cache.load("judge", base, JudgeVerdict) is None  # kinds do not share entries


def test_judge_verdict_round_trips(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path)
    key = ContentKey("abc", 0, 600, "offline-judge", "group_seed=7 pool=p")
    verdict = JudgeVerdict(
        score=0.75,
        comparisons=[Comparison(reference="love_01", first="A", second="B", score=1.0)],
        backend="offline-judge",
    )
    cache.store("judge", key, verdict)
    assert cache.load("judge", key, JudgeVerdict) == verdict


def test_write_atomic_leaves_the_old_entry_whole_when_a_write_fails(tmp_path: Path) -> None:
    target = tmp_path / "entry.json"
    write_atomic(target, b'{"value": 1}')
    with pytest.raises(TypeError):
        write_atomic(target, '{"value": 2}')  # type: ignore[arg-type]  # str into a binary file: the write fails
    assert target.read_bytes() == b'{"value": 1}'
    assert sorted(path.name for path in tmp_path.iterdir()) == ["entry.json"]


def test_a_stray_temporary_file_is_never_read_as_an_entry(tmp_path: Path) -> None:
    cache = ContentCache(tmp_path)
    key = ContentKey("abc", 0, 600, "offline-stats")
    (tmp_path / "aesthetic").mkdir()
    (tmp_path / "aesthetic" / f"{key.digest}.json.x1y2.tmp").write_text('{"key": {}, "val')
    assert cache.load("aesthetic", key, AestheticScore) is None


async def test_cached_renderer_renders_each_sketch_once(tmp_path: Path) -> None:
    inner = CountingRenderer()
    renderer = CachedRenderer(inner, ContentCache(tmp_path), size=600, renderer_id="p5@x")
    first = [await renderer.render(source, seed=0) for source in ("a", "bb", "a")]
    assert (inner.calls, renderer.renders, renderer.hits) == (2, 2, 1)
    # A resumed run is a new process: a fresh renderer over the same directory still finds everything.
    resumed = CachedRenderer(CountingRenderer(), ContentCache(tmp_path), size=600, renderer_id="p5@x")
    again = [await resumed.render(source, seed=0) for source in ("a", "bb")]
    assert resumed.renders == 0 and again == first[:2]
    await resumed.render("a", seed=1)
    assert resumed.renders == 1  # another seed is another picture


async def test_the_same_sketch_twice_in_one_batch_renders_once(tmp_path: Path) -> None:
    inner = CountingRenderer()
    renderer = CachedRenderer(inner, ContentCache(tmp_path), size=600, renderer_id="p5@x")
    results = await asyncio.gather(*(renderer.render("same", seed=0) for _ in range(4)))
    assert inner.calls == 1 and renderer.hits == 3
    assert all(result == results[0] for result in results)
