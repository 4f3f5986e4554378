"""The `pool` flow's refresh: re-render and re-gate the bundled seed pool and report what changed.

Run it after touching the renderer, the vendored libraries or the gate (and weekly on the schedule in
prefect.yaml): a table artifact lists, per seed sketch, its verdict (and whether it changed since the last
refresh), its paint coverage against the committed PNG's, and the share of pixels that moved.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefect import flow, unmapped
from prefect.artifacts import create_table_artifact

from rewards.cache import write_atomic
from tasks.fanout import close_reward_engine
from tasks.pool import read_last, refresh_sketch
from watercolour.config import RenderSettings
from watercolour.reference_pool import BUNDLED_POOL


@flow(name="pool", log_prints=True)
def refresh_pool(seed_dir: str | None = None, report: str = "data/pool-refresh.json") -> list[dict]:
    """Refresh every `*.js` in `seed_dir` (the bundled seed pool by default); keep the report for next time."""
    sketches = sorted(Path(seed_dir or BUNDLED_POOL).glob("*.js"))
    if not sketches:
        raise FileNotFoundError(f"no seed sketches (*.js) in {seed_dir or BUNDLED_POOL}")
    report_path = Path(report)
    last = read_last(report_path)
    try:
        futures = refresh_sketch.map(sketches, unmapped(RenderSettings()), [last.get(s.stem) for s in sketches])
        rows = futures.result()
    finally:
        close_reward_engine()
    changed = [row["sketch"] for row in rows if row["verdict_changed"] or (row["moved_pixels"] or 0) > 0.01]
    create_table_artifact(
        rows,
        key="pool-refresh",
        description=f"{len(rows)} seed sketches; changed: {', '.join(changed) or 'none'}",
    )
    write_atomic(report_path, json.dumps(rows, indent=1).encode())
    print(f"refreshed {len(rows)} seed sketches; changed: {', '.join(changed) or 'none'}")
    return rows
