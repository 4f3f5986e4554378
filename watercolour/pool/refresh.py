"""The pool refresh: re-render and re-gate a pool's sketches and report what changed, for the CLI and the flow.

A refresh answers "does the pool still look like its committed pictures?" after a renderer, library or gate
change: each sketch goes through the scoring engine's gate again (no service term: the refresh measures
admission and pixels only) and is compared with the PNG committed next to it (share of pixels that moved, paint
coverage before and after) and with the verdict of the last refresh. The engine's cache lives in a temporary
directory: a refresh that answered from a cached render would not be a refresh.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from deployments.presets import load_config
from ground.files import write_atomic
from ground.records import RewardParts
from ground.run_config import RunConfig
from ground.settings import RenderSettings


# A channel difference below this is encoder or rasteriser noise, not a changed picture.
PIXEL_TOLERANCE = 8
# A share of moved pixels above this is a changed picture.
CHANGED_SHARE = 0.01
# The gate alone: every service term at weight 0 is never built, so a refresh needs no network.
GATE_ONLY = {"gate": 1.0, "length": 0.0, "judge": 0.0, "aesthetic": 0.0}


def refresh_config(run_dir: Path, render: RenderSettings | None = None) -> RunConfig:
    """The configuration a refresh scores under: the offline preset's gate, these render settings, no services."""
    settings = (render or RenderSettings()).model_dump()
    return load_config("offline", {"weights": GATE_ONLY, "render": settings, "run_dir": str(run_dir)})


def seed_sketches(folder: Path) -> list[Path]:
    sketches = sorted(Path(folder).glob("*.js"))
    if not sketches:
        raise FileNotFoundError(f"no sketches (*.js) in {folder}: pass a pool folder that holds them")
    return sketches


def moved_pixels(before: bytes, after: bytes) -> float:
    """Share of pixels whose largest channel difference exceeds the tolerance (1.0 when the sizes differ)."""
    import numpy as np
    from PIL import Image

    a = np.asarray(Image.open(io.BytesIO(before)).convert("RGB"), dtype=np.int16)
    b = np.asarray(Image.open(io.BytesIO(after)).convert("RGB"), dtype=np.int16)
    if a.shape != b.shape:
        return 1.0
    return float((np.abs(a - b).max(axis=2) > PIXEL_TOLERANCE).mean())


def refresh_row(sketch: Path, parts: RewardParts, last: dict[str, Any] | None) -> dict[str, Any]:
    """One sketch's report row from its fresh verdict, its committed PNG and the last refresh's row."""
    from renderers.coverage import paint_coverage

    verdict = parts.verdict
    if verdict is None:
        assert parts.dead_letter is not None
        raise RuntimeError(f"{sketch.name} could not be rendered: {parts.dead_letter.cause}")
    render = verdict.render
    png = render.png if render is not None else None
    coverage = render.coverage if render is not None else None
    committed = sketch.with_suffix(".png")
    before = committed.read_bytes() if committed.exists() else None
    row: dict[str, Any] = {
        "sketch": sketch.stem,
        "passed": verdict.passed,
        "violations": ", ".join(verdict.violations),
        "verdict_changed": last is not None and last.get("passed") != verdict.passed,
        "coverage_committed": round(paint_coverage(before), 4) if before else None,
        "coverage_now": round(coverage, 4) if coverage is not None else None,
        "moved_pixels": round(moved_pixels(before, png), 4) if before and png else None,
    }
    if row["coverage_committed"] is not None and row["coverage_now"] is not None:
        row["coverage_drift"] = round(row["coverage_now"] - row["coverage_committed"], 4)
    else:
        row["coverage_drift"] = None
    return row


async def refresh_sketches(sketches: list[Path], last: dict[str, dict[str, Any]], run_dir: Path) -> list[dict]:
    """Refresh every sketch in one engine batch on the caller's loop (the CLI's path)."""
    from rewards.scoring.scoring_engine import ScoringEngine

    engine = ScoringEngine(refresh_config(run_dir).scoring, run_dir)
    try:
        scored = await engine.score([sketch.read_text() for sketch in sketches], [0] * len(sketches), step=None)
    finally:
        await engine.aclose()
    return [refresh_row(sketch, parts, last.get(sketch.stem)) for sketch, parts in zip(sketches, scored, strict=True)]


def changed(rows: list[dict[str, Any]]) -> list[str]:
    return [row["sketch"] for row in rows if row["verdict_changed"] or (row["moved_pixels"] or 0) > CHANGED_SHARE]


def read_last(report: Path) -> dict[str, dict[str, Any]]:
    return {row["sketch"]: row for row in json.loads(report.read_text())} if report.exists() else {}


def write_report(report: Path, rows: list[dict[str, Any]]) -> None:
    write_atomic(Path(report), json.dumps(rows, indent=1).encode())
