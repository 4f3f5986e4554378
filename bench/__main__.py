"""`python -m bench`: time the warm pool against the reference-style baseline and print one table.

Scenarios:
  step        eight typical 600x600 renders (one training step's worth), cold start included: the pool is
              launched, renders all eight concurrently and is closed; the baseline launches one browser and
              renders them one after another on fresh pages.
  throughput  the warm pool only: every sketch at three seeds, submitted at once.
Pictures are compared too: mean absolute pixel difference (0-255) between the two renderers, same seed.
`--scenario throughput` runs the warm pool's throughput alone (no baseline): the check that a change to the
renderer kept its speed; `--against DIR` runs it alternately here and in DIR, the code before the change
(bench/renders/paired.py).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

from bench.renders.baseline import PUBLISHED_FLAGS, render_sequentially
from bench.renders.paired import paired, print_paired
from ground.records import RenderResult
from renderers import BrowserPool


ROOT = Path(__file__).resolve().parents[1]
SEED_POOL = ROOT / "ground" / "seed_pool"
BUNDLED = Path(__file__).resolve().parent / "sketches"
STEP_SIZE = 8


def step_sketches() -> tuple[list[tuple[str, int]], str]:
    """Eight (source, seed) pairs: the seed pool's first eight sketches, else the bundled four at two seeds."""
    seeded = sorted(SEED_POOL.glob("*.js"))
    if len(seeded) >= STEP_SIZE:
        return [(path.read_text(), 0) for path in seeded[:STEP_SIZE]], f"{SEED_POOL.relative_to(ROOT)} (first 8)"
    bundled = sorted(BUNDLED.glob("*.js"))
    pairs = [(path.read_text(), seed) for seed in (0, 1) for path in bundled]
    return pairs[:STEP_SIZE], f"{BUNDLED.relative_to(ROOT)} ({len(bundled)} sketches x 2 seeds)"


def row(scenario: str, renderer: str, results: list[RenderResult], wall_s: float, renders: int | None = None) -> dict:
    totals = sorted(r.render_ms / 1000.0 for r in results)
    draws = [r.draw_ms or 0.0 for r in results]
    return {
        "scenario": scenario,
        "renderer": renderer,
        "renders": renders or len(results),
        "ok": sum(r.ok for r in results),
        "p50_s": round(statistics.median(totals), 2),
        "p95_s": round(totals[min(len(totals) - 1, int(0.95 * len(totals)))], 2),
        "per_min": round(60.0 * (renders or len(results)) / wall_s, 1),
        "draw_share": round(sum(draws) / 1000.0 / sum(totals), 2),
        "wall_s": round(wall_s, 2),
    }


async def pool_step(pairs: list[tuple[str, int]]) -> tuple[list[RenderResult], float]:
    started = time.perf_counter()
    async with BrowserPool() as pool:
        results = await asyncio.gather(*(pool.render(source, seed) for source, seed in pairs))
    return list(results), time.perf_counter() - started


async def pool_throughput(pairs: list[tuple[str, int]]) -> tuple[list[RenderResult], float]:
    async with BrowserPool() as pool:
        await asyncio.gather(*(pool.render(source, seed) for source, seed in pairs[:4]))  # warm every slot
        jobs = [(source, seed + extra) for extra in (0, 10, 20) for source, seed in pairs]
        started = time.perf_counter()
        results = await asyncio.gather(*(pool.render(source, seed) for source, seed in jobs))
    return list(results), time.perf_counter() - started


def mean_abs_diff(a: bytes, b: bytes) -> float:
    pa, pb = (np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16) for png in (a, b))
    return float(np.abs(pa - pb).mean())


async def run_throughput() -> dict:
    pairs, origin = step_sketches()
    results, wall = await pool_throughput(pairs)
    return {
        "sketches": origin,
        "cpu_count": os.cpu_count(),
        "rows": [row("throughput (warm)", "warm pool", results, wall)],
    }


async def run(quick: bool) -> dict:
    pairs, origin = step_sketches()
    step_results, step_wall = await pool_step(pairs)
    baseline_pairs = pairs[:2] if quick else pairs
    baseline_results, baseline_wall = await render_sequentially(baseline_pairs)
    if quick:  # launch once, then the measured per-sketch time for the rest of the step
        per_sketch = statistics.mean(r.render_ms for r in baseline_results) / 1000.0
        baseline_wall += per_sketch * (STEP_SIZE - len(baseline_pairs))
    throughput_results, throughput_wall = await pool_throughput(pairs)
    diffs = [
        mean_abs_diff(b.png, p.png)
        for b, p in zip(baseline_results, step_results[: len(baseline_results)], strict=True)
        if b.png and p.png
    ]
    rows = [
        row("step (8 x 600px, cold)", "warm pool", step_results, step_wall),
        row("step (8 x 600px, cold)", "baseline", baseline_results, baseline_wall, renders=STEP_SIZE),
        row("throughput (warm)", "warm pool", throughput_results, throughput_wall),
    ]
    return {
        "sketches": origin,
        "cpu_count": os.cpu_count(),
        "pool": {"browsers": BrowserPool().browsers, "pages_per_browser": BrowserPool().pages_per_browser},
        "baseline_flags": PUBLISHED_FLAGS,
        "baseline_rendered": len(baseline_results),
        "baseline_extrapolated": quick,
        "rows": rows,
        "step_speedup": round(baseline_wall / step_wall, 1),
        "mean_abs_pixel_diff_vs_baseline": [round(d, 3) for d in diffs],
    }


def print_table(report: dict) -> None:
    print(f"sketches: {report['sketches']}; {report['cpu_count']} cores; pool {report.get('pool', 'default')}")
    if report.get("baseline_extrapolated"):
        print(f"--quick: the baseline rendered {report['baseline_rendered']} of 8; its step time is extrapolated")
    header = f"{'scenario':<24}{'renderer':<11}{'n':>4}{'ok':>4}{'p50 s':>8}{'p95 s':>8}{'/min':>8}{'draw/total':>11}"
    print(header + f"{'wall s':>9}")
    for r in report["rows"]:
        print(
            f"{r['scenario']:<24}{r['renderer']:<11}{r['renders']:>4}{r['ok']:>4}{r['p50_s']:>8}{r['p95_s']:>8}"
            f"{r['per_min']:>8}{r['draw_share']:>11}{r['wall_s']:>9}"
        )
    if "step_speedup" in report:
        print(f"step speed-up, warm pool over baseline: {report['step_speedup']}x")
        print(f"mean abs pixel diff, pool vs baseline (0-255): {report['mean_abs_pixel_diff_vs_baseline']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="baseline renders 2 of the 8 sketches, extrapolated")
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument(
        "--scenario", choices=["all", "throughput"], default="all", help="throughput: the warm pool alone, no baseline"
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="with --scenario throughput: another checkout (the code before a change), run alternately with this one",
    )
    parser.add_argument("--pairs", type=int, default=3, help="with --against: how many pairs of runs")
    args = parser.parse_args(argv)
    if args.against is not None:
        if args.scenario != "throughput":
            parser.error("--against pairs the throughput scenario: add --scenario throughput")
        report = paired(args.against, args.pairs)
        if args.json:
            json.dump(report, sys.stdout, indent=2)
        else:
            print_paired(report)
        return 0
    report = asyncio.run(run_throughput() if args.scenario == "throughput" else run(args.quick))
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
