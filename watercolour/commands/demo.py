"""`watercolour demo`: render the bundled seed pool offline and write a gallery of it.

It is the smallest end-to-end check that the renderer works on this machine: every seed sketch goes through the
browser pool at one seed, the renders land in `OUT/gallery/` next to an `index.html`, and a table of coverage and
render time plus the throughput is printed. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from renderers import render_many
from watercolour.gallery import GalleryItem, write_gallery
from watercolour.records import RenderResult
from watercolour.reference_pool import load_pool


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("runs/demo"), help="Output folder (default: runs/demo).")
    parser.add_argument("--seed", type=int, default=0, help="Render seed (default: 0, the committed renders' seed).")


def report_progress(done: int, total: int, result: RenderResult) -> None:
    status = "ok" if result.ok else "failed"
    print(f"[{done}/{total}] {status} in {result.render_ms:.0f} ms", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    refs = load_pool()
    gallery_dir = args.out / "gallery"
    gallery_dir.mkdir(parents=True, exist_ok=True)
    print(f"rendering {len(refs)} seed sketches at seed {args.seed}", file=sys.stderr)
    started = time.perf_counter()
    # A demo should show paintings on a busy laptop too: seed sketches take 1-3 s alone but several times that
    # when other Chromiums share the cores, so the deadline is twice the gate's.
    results = render_many([ref.sketch for ref in refs], seed=args.seed, deadline_s=60.0, progress=report_progress)
    elapsed = time.perf_counter() - started

    items = []
    for ref, result in zip(refs, results, strict=True):
        if result.png is not None:
            (gallery_dir / f"{ref.name}.png").write_bytes(result.png)
        items.append(
            GalleryItem(
                image=f"{ref.name}.png",
                title=f"{ref.subject} ({ref.name})",
                sketch=ref.sketch,
                tier=ref.tier,
                violations=[f"render failed: {'; '.join(result.errors) or 'no canvas'}"] if not result.ok else [],
            )
        )
    page = write_gallery(items, gallery_dir, title=f"Seed reference pool, seed {args.seed}")

    print(f"{'name':32} {'tier':5} {'coverage':>8} {'render ms':>9}")
    for ref, result in zip(refs, results, strict=True):
        coverage = f"{result.coverage:.3f}" if result.coverage is not None else "-"
        print(f"{ref.name:32} {ref.tier:5} {coverage:>8} {result.render_ms:>9.0f}")
    failed = [ref.name for ref, result in zip(refs, results, strict=True) if not result.ok]
    print(f"{len(refs)} renders in {elapsed:.1f} s, {len(refs) / elapsed * 60:.1f} renders/min; gallery: {page}")
    if failed:
        print(f"failed to render: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
