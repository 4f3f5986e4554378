"""The `pool` flow's refresh: queue new candidates where the pool is thin, and re-render the seed pool for drift.

With `generate` settings (the models to ask), the subjects the latest revision under `pool_root` serves badly
(`watercolour.pool.plan`: too few references, or all of them easy or out of reach in its calibration) get
new candidates in a folder of this run's own under `pool_root/candidates/`, queued for rating: rate them with
`watercolour pool rate FOLDER`, then `pool/build` with `candidates=FOLDER` packs them (flows/pool_build.py).

Run it after touching the renderer, the vendored libraries or the gate (and weekly on the schedule in
prefect.yaml): a table artifact lists, per seed sketch, its verdict (and whether it changed since the last
refresh), its paint coverage against the committed PNG's, and the share of pixels that moved. The work is
`watercolour.pool.refresh`, the same as `watercolour pool refresh`; here each sketch is a task.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from prefect import flow, runtime, unmapped
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from ground.reference_pool import BUNDLED_POOL, load_pool
from ground.settings import RenderSettings
from rewards.scoring.engine_thread import close_engine_thread
from tasks.pool import refresh_sketch
from tasks.pool_build import generate_candidates
from watercolour.pool.generate import GenerateSettings
from watercolour.pool.plan import latest_pool, read_calibration, refresh_plan
from watercolour.pool.refresh import changed, read_last, seed_sketches, write_report


def queue_candidates(generate: GenerateSettings, pool_root: Path, minimum: int, max_subjects: int) -> dict | None:
    """Generate candidates for the subjects the latest pool serves badly; None when none is due."""
    pool_dir = latest_pool(pool_root)
    plan = refresh_plan(load_pool(pool_dir), read_calibration(pool_dir), minimum=minimum, limit=max_subjects)
    create_table_artifact(plan or [{"subject": "-", "references": "-", "reason": "none due"}], key="pool-refresh-plan")
    if not plan:
        return None
    folder = pool_root / "candidates" / str(runtime.flow_run.name)
    subjects = [row["subject"] for row in plan]
    settings = generate.model_copy(update={"subjects": subjects, "per_model": len(subjects), "attempts": 1})
    try:
        summary = generate_candidates(settings, folder, [])
    finally:
        close_engine_thread()
    create_markdown_artifact(
        f"## {summary['passed']} candidates await rating\n\nFor {', '.join(subjects)}. Rate them with "
        f"`watercolour pool rate {folder}`, then pack them with `prefect deployment run pool/build -p "
        f"candidates={folder}`.",
        key="pool-refresh-queue",
    )
    print(f"queued {summary['passed']} candidates for rating in {folder}")
    return {"folder": str(folder), "subjects": subjects, **summary}


@flow(name="pool", log_prints=True)
def refresh_pool(
    seed_dir: str | None = None,
    report: str = "runs/pool-refresh/report.json",
    generate: GenerateSettings | None = None,
    pool_root: str = "data/pool",
    minimum: int = 2,
    max_subjects: int = 4,
) -> dict:
    """Queue candidates for thin subjects (when `generate` names models), then refresh every `*.js` in `seed_dir`
    (the bundled seed pool by default) and keep the report for next time.

    Args:
        seed_dir: The sketches to re-render for drift (default: the bundled seed pool).
        report: The last refresh's report, compared against and rewritten.
        generate: Models (and critic) that write new candidates; omit for the drift check alone.
        pool_root: Where the `pool/build` flow keeps revisions (LATEST) and candidate folders.
        minimum: A subject with fewer references than this is thin.
        max_subjects: At most this many subjects get new candidates per refresh.
    """
    queued = queue_candidates(generate, Path(pool_root), minimum, max_subjects) if generate is not None else None
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
    return {"drift": rows, "queued": queued}
