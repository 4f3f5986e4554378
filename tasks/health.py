"""Prefect tasks that check the remote services a run will call (`watercolour.service_health`), with retries."""

from __future__ import annotations

import asyncio

from prefect import task

from watercolour.config import RunConfig
from watercolour.service_health import ping_judge, services_to_check, wait_for_scorer
from watercolour.space_control import SpaceSettings


@task(retries=2, retry_delay_seconds=[5, 20])
def check_judge(config: RunConfig) -> str:
    return asyncio.run(ping_judge(config.judge))


@task(retries=1, retry_delay_seconds=[10])
def check_scorer(config: RunConfig, space: SpaceSettings | None) -> str:
    return wait_for_scorer(config, space)


def check_services(config: RunConfig, space: SpaceSettings | None) -> dict[str, str]:
    """Run the checks this configuration needs (inside a flow: each is a task); report every service."""
    report = {name: "offline or weight 0: not called" for name in ("scorer", "judge")}
    for service in services_to_check(config):
        report[service] = check_scorer(config, space) if service == "scorer" else check_judge(config)
    return report
