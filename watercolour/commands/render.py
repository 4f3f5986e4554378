"""`watercolour render`: render sketches or completions to PNGs, one JSON line (or human line) per input.

A `.js` file is a sketch; any other file is a completion whose sketch is extracted first. Everything given is
rendered, even what the gate would refuse; the static check's violations are reported alongside. The batch
machinery here (reading inputs, one warm browser pool, progress on stderr) is shared with `watercolour gate`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ground.records import RenderResult
from ground.settings import RenderSettings
from ground.sketch import extract_sketch
from rewards.gate import static_check
from watercolour.commands.arguments import existing_file, output_folder, positive_float, positive_int


if TYPE_CHECKING:
    from renderers import BrowserPool


class BrowsersOnDemand:
    """A BrowserPool started at the first render, so a batch the static checks refuse never launches Chromium."""

    def __init__(self, settings: RenderSettings) -> None:
        self.settings = settings
        self._browsers: BrowserPool | None = None
        self._starting = asyncio.Lock()

    async def render(self, source: str, seed: int = 0, size: int = 600) -> RenderResult:
        from renderers import BrowserPool

        async with self._starting:
            browsers = self._browsers
            if browsers is None:
                browsers = self._browsers = BrowserPool.from_settings(self.settings)
                await browsers.start()
        return await browsers.render(source, seed=seed, size=size)

    async def __aenter__(self) -> BrowsersOnDemand:
        return self

    async def __aexit__(self, *exc) -> None:
        if self._browsers is not None:
            await self._browsers.close()


def add_arguments(parser: argparse.ArgumentParser, writes_pngs: bool = True) -> None:
    parser.add_argument(
        "paths", nargs="+", type=existing_file, metavar="PATH", help="Sketch (.js) or completion files."
    )
    if writes_pngs:
        parser.add_argument(
            "--out", type=output_folder, required=True, help="Folder for the PNGs, named after each input."
        )
        parser.add_argument("--size", type=canvas_size, default=600, help="Canvas size in pixels (default 600).")
    parser.add_argument("--seed", type=int, default=0, help="Seed for Math.random and p5.brush (default 0).")
    parser.add_argument(
        "--deadline", type=positive_float, default=30.0, help="Seconds before a page is killed (default 30)."
    )
    parser.add_argument("--json", action="store_true", help="One JSON object per input per line on stdout.")


# A typo (60000) would ask for a 14 GB picture; 4096 is well above any size the project renders (600 for the
# reward, 300 in tests).
MAX_SIZE = 4096


def canvas_size(text: str) -> int:
    size = positive_int(text)
    if size > MAX_SIZE:
        raise argparse.ArgumentTypeError(f"{text} is larger than {MAX_SIZE} pixels")
    return size


def read_completion(path: Path) -> str:
    """A file as text; bytes that are not UTF-8 become replacement characters rather than an error."""
    return path.read_bytes().decode("utf-8", "replace")


def sketch_of(path: Path) -> str | None:
    """The sketch a file holds: a .js file is one; any other file is a completion to extract it from."""
    text = read_completion(path)
    return text if path.suffix == ".js" else extract_sketch(text)


def run_batch(args: argparse.Namespace, process: Callable[[object, Path], Awaitable[dict]], show: Callable) -> int:
    """Run `process(browsers, path)` for every input on one warm browser pool (the inputs were checked when parsed); 1 if the
    renderer failed."""
    return asyncio.run(_run_all(args, process, show))


async def _run_all(args: argparse.Namespace, process: Callable, show: Callable) -> int:
    from renderers import RendererUnavailable

    failures = 0
    async with BrowsersOnDemand(RenderSettings(deadline_s=args.deadline)) as browsers:

        async def one(path: Path) -> tuple[Path, dict, float]:
            started = time.perf_counter()
            try:
                line = await process(browsers, path)
            except RendererUnavailable as error:
                line = {"path": str(path), "error": f"renderer unavailable: {error}"}
            return path, line, time.perf_counter() - started

        jobs = [asyncio.ensure_future(one(path)) for path in args.paths]
        for done, job in enumerate(asyncio.as_completed(jobs), start=1):
            path, line, seconds = await job
            failures += "error" in line
            if len(jobs) > 1:
                print(f"[{done}/{len(jobs)}] {path.name} {seconds:.1f} s", file=sys.stderr, flush=True)
            print(json.dumps(line) if args.json else show(line), flush=True)
    return 1 if failures else 0


async def render_one(browsers, path: Path, args: argparse.Namespace) -> dict:
    sketch = sketch_of(path)
    violations = static_check(sketch if sketch is not None else read_completion(path)).violations
    line: dict = {
        "path": str(path),
        "ok": False,
        "violations": violations,
        "coverage": None,
        "render_ms": None,
        "png": None,
    }
    if sketch is None:
        return line
    render = await browsers.render(sketch, seed=args.seed, size=args.size)
    if render.png is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        png = args.out / f"{path.stem}.png"
        png.write_bytes(render.png)
        line["png"] = str(png)
    return {**line, **render.summary(), "png": line["png"]}


def show_render(line: dict) -> str:
    if "error" in line:
        return f"{line['path']}: {line['error']}"
    coverage = "-" if line["coverage"] is None else f"{line['coverage']:.3f}"
    where = f" -> {line['png']}" if line["png"] else ""
    flags = f"  [{', '.join(line['violations'])}]" if line["violations"] else ""
    return f"{line['path']}: {'ok' if line['ok'] else 'FAILED'} coverage {coverage}{where}{flags}"


def run(args: argparse.Namespace) -> int:
    return run_batch(args, lambda browsers, path: render_one(browsers, path, args), show_render)
