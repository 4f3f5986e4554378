"""The `train` flow: check the services, load the pool, run GRPO (resumably), publish, put the scorer to sleep.

The scorer Space is put to sleep on every way out: a `finally` in the flow, state hooks for completion, failure,
cancellation and crash that call the same idempotent function, and the Space's own idle timeout, set at run
start, for the cases where no Python runs at all (SIGKILL, OOM; Prefect skips on_crashed on process pools).

Resume: retry a failed run (`prefect flow-run retry <id>` or the UI's Retry). Task results are persisted under
the DEFAULT cache policy (inputs + task source + run id), so health checks and the pool come back Cached and
`grpo_train` trains on from the latest checkpoint, which its input names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.logging.loggers import flow_run_logger

from tasks.fanout import FanOutSettings
from tasks.health import check_services
from tasks.pool import load_reference_pool
from tasks.publish import publish_run
from tasks.space import put_space_to_sleep, set_space_backstop
from tasks.training import grpo_train
from watercolour.config import load_config
from watercolour.publish import PublishSettings
from watercolour.run_dir import latest_checkpoint
from watercolour.space_control import SpaceSettings, sleep_space


def sleep_scorer_space(flow, flow_run, state) -> None:
    """State hook: the same idempotent sleep as the flow's `finally`, for when the flow body never got there."""
    space = flow_run.parameters.get("space")
    if not space:
        return
    settings = SpaceSettings.model_validate(space)
    logger = flow_run_logger(flow_run, flow)
    try:
        logger.info("Space %s on %s: %s", settings.repo_id, state.name, sleep_space(settings))
    except Exception as error:  # a hook must not raise; the Space's idle timeout is the last line
        logger.error("could not sleep Space %s (%s); its idle timeout will", settings.repo_id, error)


@flow(
    name="train",
    log_prints=True,
    persist_result=True,
    on_completion=[sleep_scorer_space],
    on_failure=[sleep_scorer_space],
    on_cancellation=[sleep_scorer_space],
    on_crashed=[sleep_scorer_space],
)
def train(
    preset: str = "smoke",
    overrides: dict[str, Any] | None = None,
    space: SpaceSettings | None = None,
    fan_out: FanOutSettings | None = None,
    publish: PublishSettings | None = None,
    fail_at_step: int | None = None,
) -> dict[str, Any]:
    """Train one run of `preset` with `overrides` (dotted keys, e.g. {"training.steps": 2}).

    `space` names the scorer's Space to wake and sleep; `fan_out` picks the task runner for each step's reward
    tasks; `publish` names the Hub repositories to publish to (off by default); `fail_at_step` makes the first
    attempt fail after that step, to rehearse a resume.
    """
    config = load_config(preset, overrides or {})
    run_dir = Path(str(config.run_dir))
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        if space is not None:
            set_space_backstop(space)
        services = check_services(config, space)
        pool = load_reference_pool(config.pool_dir)
        checkpoint = latest_checkpoint(run_dir)
        start = checkpoint.name if checkpoint is not None else None
        trained = grpo_train(config, run_dir, start, fan_out or FanOutSettings(), fail_at_step)
        published = publish_run(run_dir, publish) if publish is not None else None
    finally:
        if space is not None:
            # return_state: a failing sleep is logged, and never hides the error that brought us here.
            put_space_to_sleep(space, return_state=True)
    return {"run": config.name, "services": services, "pool": pool, **trained, "published": published}
