"""`watercolour demo`: the README's main job on its offline default.

1. Render the bundled seed pool and write a gallery of it (`OUT/pool-gallery/`): the smallest end-to-end check that the
renderer works on this machine, with a table of coverage, render time and throughput. 2. Learn: the `demo` preset's
warm start then GRPO (`watercolour.training.demo_run`) into `OUT/learn/`, resuming if it was interrupted; with
`--smoke`, only the `smoke` preset's few GRPO steps from its cached warm start, into `OUT/smoke/`. Either way it ends
with the learning summary (first and last step, the slope and its t-statistic) and the reward curve as `curve.svg`.

Progress goes to stderr, tables to stdout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ground.records import RenderResult
from ground.reference_pool import load_pool
from renderers import render_many
from watercolour.commands.arguments import output_folder, override
from watercolour.run_records.gallery import GalleryItem, write_gallery


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=output_folder, default="runs/demo", help="Output folder (default: runs/demo).")
    parser.add_argument("--seed", type=int, default=0, help="Render seed (default: 0, the committed renders' seed).")
    parser.add_argument("--pool-only", action="store_true", help="Only render the pool gallery; no training.")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="Only the smoke preset's 3 GRPO steps from its warm start, made once and then cached (minutes; "
        "proves the plumbing and paints, learns little) instead of the demo preset's warm start and GRPO run "
        "(about half an hour on 2 cores).",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        type=override,
        default=[],
        metavar="KEY=VALUE",
        help="A configuration override of the learning run, e.g. --set training.num_generations=16 "
        "--set training.per_device_batch_size=16 --set training.gradient_accumulation_steps=1 (repeatable).",
    )


def report_progress(done: int, total: int, result: RenderResult) -> None:
    status = "ok" if result.ok else "failed"
    print(f"[{done}/{total}] {status} in {result.render_ms:.0f} ms", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    status = render_pool_gallery(args.out / "pool-gallery", args.seed)
    if status or args.pool_only:
        return status
    return train_and_summarize(args.out, smoke=args.smoke, overrides=dict(args.overrides))


def train_and_summarize(out: Path, smoke: bool = False, overrides: dict | None = None) -> int:
    """The training half: the warm-started learning run (or the smoke run), then the learning summary."""
    from watercolour.run_records.curve_svg import write_curve_svg
    from watercolour.run_records.run_dir import use_run_environment
    from watercolour.training.evaluation import format_summary, summarize_run

    if not smoke:
        from watercolour.training.demo_run import run_demo

        run_demo(out / "learn", overrides=overrides)
        return 0
    run_dir = out / "smoke"
    use_run_environment(run_dir)  # trackio reads its directory once, when TRL imports it
    from deployments.presets import load_config
    from watercolour.run_records.run_dir import latest_checkpoint
    from watercolour.training.run import train

    config = load_config("smoke", {**(overrides or {}), "run_dir": str(run_dir)})
    print(f"training: preset smoke, {config.training.steps} GRPO steps into {run_dir}", file=sys.stderr)
    written = train(config, resume=latest_checkpoint(run_dir) is not None)
    print(format_summary(summarize_run(run_dir)))
    curve = write_curve_svg(run_dir, title="smoke")
    print(f"gallery: {written['gallery']}  curve: {curve}  adapter: {written['adapter']}")
    return 0


def render_pool_gallery(gallery_dir: Path, seed: int) -> int:
    """Render every seed sketch at `seed` into `gallery_dir` with an index.html; 1 if any failed to render."""
    refs = load_pool()
    gallery_dir.mkdir(parents=True, exist_ok=True)
    print(f"rendering {len(refs)} seed sketches at seed {seed}", file=sys.stderr)
    started = time.perf_counter()
    # A demo should show paintings on a busy laptop too: seed sketches take 1-3 s alone but several times that
    # when other Chromiums share the cores, so the deadline is twice the gate's.
    results = render_many([ref.sketch for ref in refs], seed=seed, deadline_s=60.0, progress=report_progress)
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
    page = write_gallery(items, gallery_dir, title=f"Seed reference pool, seed {seed}")

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
