"""Pool tasks: load the reference pool once per run, and re-render and re-gate the bundled seed sketches.

A refresh answers "does the pool still look like its committed pictures?" after a renderer, library or gate
change: for each seed sketch it renders and gates the code again and compares with the PNG committed next to
it (share of pixels that moved, paint coverage before and after) and with the verdict of the last refresh.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import DEFAULT

from tasks.fanout import reward_engine
from watercolour.config import RenderSettings


# A channel difference below this is encoder or rasteriser noise, not a changed picture.
PIXEL_TOLERANCE = 8


def pool_fingerprint(references: list[Any]) -> str:
    """A hash of the pool's content (names, tiers, pictures): what the run's judge will compare against."""
    digest = hashlib.sha256()
    for reference in sorted(references, key=lambda r: r.name):
        digest.update(f"{reference.name}\0{reference.tier}\0".encode() + hashlib.sha256(reference.png).digest())
    return digest.hexdigest()[:16]


@task(persist_result=True, cache_policy=DEFAULT, retries=1, retry_delay_seconds=[2])
def load_reference_pool(pool_dir: Path | None) -> dict[str, Any]:
    """Read and validate the pool before training needs it; the reward loads its own copy from the same place."""
    from watercolour.reference_pool import load_pool

    references = load_pool(pool_dir)
    tiers: dict[str, int] = {}
    for reference in references:
        tiers[reference.tier] = tiers.get(reference.tier, 0) + 1
    return {"references": len(references), "tiers": tiers, "fingerprint": pool_fingerprint(references)}


def moved_pixels(before: bytes, after: bytes) -> float:
    """Share of pixels whose largest channel difference exceeds the tolerance (1.0 when the sizes differ)."""
    import numpy as np
    from PIL import Image

    a = np.asarray(Image.open(io.BytesIO(before)).convert("RGB"), dtype=np.int16)
    b = np.asarray(Image.open(io.BytesIO(after)).convert("RGB"), dtype=np.int16)
    if a.shape != b.shape:
        return 1.0
    return float((np.abs(a - b).max(axis=2) > PIXEL_TOLERANCE).mean())


async def _gate_sketch(source: str, render: RenderSettings) -> dict[str, Any]:
    from rewards.gate import gate

    pool = await reward_engine().browser_pool(render)
    verdict = await gate(source, pool, seed=render.seed)
    result = verdict.render
    return {
        "passed": verdict.passed,
        "violations": verdict.violations,
        "coverage": result.coverage if result else None,
        "png": result.png if result else None,
    }


@task(task_run_name="refresh-{sketch.stem}", retries=2, retry_delay_seconds=[2, 10])
def refresh_sketch(sketch: Path, render: RenderSettings, last: dict[str, Any] | None) -> dict[str, Any]:
    """Re-render and re-gate one seed sketch; compare with its committed PNG and the last refresh's verdict."""
    from renderers.coverage import paint_coverage

    fresh = reward_engine().run(_gate_sketch(sketch.read_text(), render))
    committed = sketch.with_suffix(".png")
    before = committed.read_bytes() if committed.exists() else None
    row: dict[str, Any] = {
        "sketch": sketch.stem,
        "passed": fresh["passed"],
        "violations": ", ".join(fresh["violations"]),
        "verdict_changed": last is not None and last.get("passed") != fresh["passed"],
        "coverage_committed": round(paint_coverage(before), 4) if before else None,
        "coverage_now": round(fresh["coverage"], 4) if fresh["coverage"] is not None else None,
        "moved_pixels": round(moved_pixels(before, fresh["png"]), 4) if before and fresh["png"] else None,
    }
    if row["coverage_committed"] is not None and row["coverage_now"] is not None:
        row["coverage_drift"] = round(row["coverage_now"] - row["coverage_committed"], 4)
    else:
        row["coverage_drift"] = None
    return row


def read_last(report: Path) -> dict[str, dict[str, Any]]:
    return {row["sketch"]: row for row in json.loads(report.read_text())} if report.exists() else {}
