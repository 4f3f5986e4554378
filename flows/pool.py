"""The `pool` flow's refresh: re-render and re-gate the bundled seed pool and report what changed.

Run it after touching the renderer, the vendored libraries or the gate (and weekly on the schedule in
prefect.yaml): a table artifact lists, per seed sketch, its verdict (and whether it changed since the last
refresh), its paint coverage against the committed PNG's, and the share of pixels that moved. The work is
`watercolour.pool_refresh`, the same as `watercolour pool refresh`; here each sketch is a task.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from prefect import flow, unmapped
from prefect.artifacts import create_table_artifact

from rewards.engine_thread import close_engine_thread
from tasks.pool import refresh_sketch
from watercolour.config import RenderSettings
from watercolour.pool_refresh import changed, read_last, seed_sketches, write_report
from watercolour.reference_pool import BUNDLED_POOL


@flow(name="pool", log_prints=True)
def refresh_pool(seed_dir: str | None = None, report: str = "runs/pool-refresh/report.json") -> list[dict]:
    """Refresh every `*.js` in `seed_dir` (the bundled seed pool by default); keep the report for next time."""
    sketches = seed_sketches(Path(seed_dir or BUNDLED_POOL))
    report_path = Path(report)
    last = read_last(report_path)
    try:
        with tempfile.TemporaryDirectory(prefix="watercolour-refresh-") as run_dir:
            futures = refresh_sketch.map(
                sketches, unmapped(Path(run_dir)), unmapped(RenderSettings()), [last.get(s.stem) for s in sketches]
            )
            rows = futures.result()
    finally:
        close_engine_thread()
    moved = changed(rows)
    create_table_artifact(
        rows, key="pool-refresh", description=f"{len(rows)} seed sketches; changed: {', '.join(moved) or 'none'}"
    )
    write_report(report_path, rows)
    print(f"refreshed {len(rows)} seed sketches; changed: {', '.join(moved) or 'none'}")
    return rows
