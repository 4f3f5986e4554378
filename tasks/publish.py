"""The Prefect task publishing a finished run (`watercolour.operations.publish`), retried on transient Hub errors."""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task

from tasks.space import retry_if_transient
from watercolour.operations.publish import PublishSettings, publish


@task(retries=2, retry_delay_seconds=[10, 60], retry_condition_fn=retry_if_transient)
def publish_run(run_dir: Path, settings: PublishSettings) -> dict[str, str]:
    urls = publish(run_dir, settings)
    get_run_logger().info("published %s", ", ".join(f"{name}: {url}" for name, url in urls.items()))
    return urls
