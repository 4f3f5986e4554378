"""`watercolour gate`: run the admission gate on sketches or completions, one JSON line (or human line) each.

A `.js` file is taken as the completion itself (a bare sketch); any other file is a completion as the policy
wrote it. Inputs that pass the static checks are rendered once on a shared warm browser pool.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rewards.gate import gate
from watercolour.commands import render


def add_arguments(parser: argparse.ArgumentParser) -> None:
    render.add_arguments(parser, writes_pngs=False)


async def gate_one(browsers, path: Path, args: argparse.Namespace) -> dict:
    verdict = await gate(render.read_completion(path), browsers, seed=args.seed)
    result = verdict.render
    return {
        "path": str(path),
        "passed": verdict.passed,
        "violations": verdict.violations,
        "details": verdict.details,
        "coverage": result.coverage if result else None,
        "render_ms": result.render_ms if result else None,
        "sketch_hash": verdict.sketch_hash,
        "counts": verdict.counts,
    }


def show_verdict(line: dict) -> str:
    if "error" in line:
        return f"{line['path']}: {line['error']}"
    if line["passed"]:
        return f"{line['path']}: passed, coverage {line['coverage']:.3f}"
    return f"{line['path']}: refused: {', '.join(line['violations'])}"


def run(args: argparse.Namespace) -> int:
    return render.run_batch(args, lambda browsers, path: gate_one(browsers, path, args), show_verdict)
