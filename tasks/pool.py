"""Pool tasks: load the reference pool once per run, and refresh one seed sketch (`watercolour.pool.refresh`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import DEFAULT

from ground.settings import RenderSettings
from rewards.scoring.engine_thread import engine_thread
from watercolour.pool.refresh import refresh_config, refresh_row


@task(persist_result=True, cache_policy=DEFAULT, retries=1, retry_delay_seconds=[2])
def load_reference_pool(pool_dir: Path | None) -> dict[str, Any]:
    """Read and validate the pool before training needs it; the reward loads its own copy from the same place."""
    from ground.reference_pool import load_pool, pool_revision, pool_summary

    return {**pool_summary(load_pool(pool_dir)), "revision": pool_revision(pool_dir)}


@task(task_run_name="refresh-{sketch.stem}", retries=2, retry_delay_seconds=[2, 10])
def refresh_sketch(sketch: Path, run_dir: Path, render: RenderSettings, last: dict[str, Any] | None) -> dict[str, Any]:
    """Re-render and re-gate one seed sketch on the process's engine; compare with its PNG and the last refresh."""
    (parts,) = engine_thread().score(refresh_config(run_dir, render).scoring, run_dir, [sketch.read_text()], [0], None)
    return refresh_row(sketch, parts, last)
