"""Prefect tasks that check the remote services a run will call (`watercolour.operations.service_health`), with
retries. Never cached: a retried run's Space may have been put to sleep since its first attempt (its crash puts it
to sleep), so every attempt wakes it and checks again."""

from __future__ import annotations

import asyncio

from prefect import task
from prefect.cache_policies import NO_CACHE

from ground.run_config import RunConfig, SpaceSettings
from rewards.judging.judge import judge_settings
from rewards.scoring.engine_thread import close_engine_thread
from watercolour.operations.service_health import (
    check_renderer,
    ping_judge,
    probe_environment,
    services_to_check,
    wait_for_scorer,
)


@task(retries=2, retry_delay_seconds=[5, 20], cache_policy=NO_CACHE)
def check_judge(config: RunConfig) -> str:
    return asyncio.run(ping_judge(judge_settings(config)))


@task(retries=1, retry_delay_seconds=[10], cache_policy=NO_CACHE)
def check_scorer(config: RunConfig, space: SpaceSettings | None) -> str:
    return wait_for_scorer(config, space)


@task(retries=2, retry_delay_seconds=[5, 20], cache_policy=NO_CACHE)
def check_environment(config: RunConfig) -> str:
    assert config.openenv is not None
    return probe_environment(config.openenv)


@task(retries=1, retry_delay_seconds=[5], cache_policy=NO_CACHE)
def check_local_renderer(config: RunConfig) -> str:
    """The renderer of the process the flow runs in (its thread fan-out and its early scoring render there). A repaint
    run's episodes render on a pool of their own, so the one checked for it is closed again rather than left idle."""
    report = check_renderer(config.scoring.render)
    if config.repaint is not None:
        close_engine_thread()
    return report


def check_services(config: RunConfig, space: SpaceSettings | None) -> dict[str, str]:
    """Run the checks this configuration needs (inside a flow: each is a task); report every service."""
    elsewhere = "scored by the OpenEnv server" if config.openenv is not None else "offline or weight 0: not called"
    report = {name: elsewhere for name in ("scorer", "judge")}
    for service in services_to_check(config):
        if service == "scorer":
            report[service] = check_scorer(config, space)
        elif service == "judge":
            report[service] = check_judge(config)
        else:
            report[service] = check_environment(config)
    return report
