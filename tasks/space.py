"""Prefect tasks around the scorer Space's lifecycle (`watercolour.operations.space_control`): only retries added."""

from __future__ import annotations

from typing import Literal

from prefect import task
from prefect.cache_policies import NO_CACHE

from ground.run_config import SpaceSettings
from watercolour.operations.space_control import is_transient, set_sleep_backstop, sleep_space


def retry_if_transient(task, task_run, state) -> bool:
    """Prefect `retry_condition_fn`: `state.result()` re-raises the task's exception."""
    try:
        state.result()
    except Exception as error:
        return is_transient(error)
    return False


@task(retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=retry_if_transient, cache_policy=NO_CACHE)
def set_space_backstop(settings: SpaceSettings) -> int | None:
    return set_sleep_backstop(settings)


@task(retries=3, retry_delay_seconds=[2, 10, 30], retry_condition_fn=retry_if_transient)
def put_space_to_sleep(settings: SpaceSettings, mode: Literal["pause", "sleep"] | None = None) -> str:
    return sleep_space(settings, mode)
