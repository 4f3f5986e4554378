"""The `health` flow: check every remote service a preset would call, without training.

The `train` flow runs the same checks first; this flow answers "is the judge up, is the scorer loaded?" on
its own, before a run is launched or while one is being debugged.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from deployments.presets import load_config
from ground.run_config import SpaceSettings
from tasks.health import check_services


@flow(name="health", log_prints=True)
def health(preset: str, overrides: dict[str, Any] | None = None, space: SpaceSettings | None = None) -> dict[str, str]:
    """Wake and probe the scorer (when its weight is above 0) and ping the judge (likewise); offline needs none."""
    config = load_config(preset, overrides or {})
    report = check_services(config, space)
    for service, outcome in report.items():
        print(f"{service}: {outcome}")
    return report
