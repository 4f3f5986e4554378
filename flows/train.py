"""The `train` flow: check the renderer and services, load the pool, run GRPO (resumably), publish, sleep the scorer.

One flow run, one run directory: `<run_dir of the configuration>/<flow-run name>-<id>` unless `run_dir` names
one, so a second run of a deployment starts afresh instead of finding the last one's checkpoints. A retry of the
same flow run keeps its id, finds its own directory and trains on from its latest checkpoint; a new run continues
another run's directory only with `continue_run`, and says so first. The directory remembers the flow run that
started it (`flow-run.json`).

The scorer Space (`space.repo_id` in the configuration: the remote presets' deployments need no extra parameter)
is woken and health-checked at the start, given its idle backstop, and put to sleep on every way out: a `finally`
in the flow, state hooks for completion, failure, cancellation and crash that call the same idempotent function,
and the Space's own idle timeout, set at run start, for the cases where no Python runs at all (SIGKILL, OOM;
Prefect skips on_crashed on process pools). The hooks are on `train_with_space`, the same flow that the remote
presets' deployments run; the offline ones run `train`, which has none, so their logs name no Space hook.

Resume: retry a failed or crashed run (`prefect flow-run retry <id>` or the UI's Retry). Task results are persisted
under the DEFAULT cache policy (inputs + task source + run id), so the pool comes back Cached and `grpo_train` trains
on from the latest checkpoint, which its input names; the health checks and the Space's wake run again, since the
Space may have been put to sleep when the first attempt crashed, unless every step is already trained (the latest
checkpoint is the last step's): then nothing is scored and the Space stays asleep. What the earlier attempt
published of the steps the retry trains again is replaced (`forget_replayed`). A failed training ends the run Failed
with one line naming the latest checkpoint and the Retry; the traceback is in the run directory's failure.log.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, runtime
from prefect.artifacts import create_markdown_artifact
from prefect.logging.loggers import flow_run_logger
from prefect.states import Failed, State

from deployments.presets import load_config, preset_names
from ground.files import write_atomic
from ground.run_config import RunConfig, SpaceSettings
from tasks.fanout import FanOutSettings
from tasks.health import check_local_renderer, check_services
from tasks.observe import artifact_key, flow_run_artifacts, forget_replayed
from tasks.pool import load_reference_pool
from tasks.publish import publish_run
from tasks.space import put_space_to_sleep, set_space_backstop
from tasks.training import grpo_train, warm_start_policy
from watercolour.operations.publish import PublishSettings
from watercolour.operations.space_control import sleep_space
from watercolour.run_records.run_dir import checkpoint_step, checkpoint_to_resume, latest_checkpoint
from watercolour.training.warm_start_cache import needs_warm_start


# The presets as a choice in the UI's run form (a str Enum renders as a select).
Preset = Enum("Preset", {name: name for name in preset_names()}, type=str)  # type: ignore[misc]
SMOKE = Preset("smoke")
STARTED_BY = "flow-run.json"


def flow_run_dir(config: RunConfig, explicit: str | None) -> Path:
    """The explicit directory, or one of this flow run's own under the configuration's run_dir."""
    if explicit:
        return Path(explicit)
    return Path(config.run_dir) / f"{runtime.flow_run.name}-{str(runtime.flow_run.id)[:8]}"


def claim_run_dir(run_dir: Path, continue_run: bool) -> str:
    """Make sure this flow run may train in `run_dir`; return what it will do there, for the log."""
    here = str(runtime.flow_run.id)
    marker = run_dir / STARTED_BY
    owner = json.loads(marker.read_text())["flow_run_id"] if marker.is_file() else None
    checkpoint = checkpoint_to_resume(
        run_dir,
        resume=owner == here or continue_run,
        fix="pass continue_run=true to continue that run, or leave run_dir empty for a directory of this run's own",
        started_by=f"the run of flow run {owner}",
    )
    if checkpoint is None:
        action = f"starting a new run in {run_dir}"
    elif owner == here:
        action = f"resuming this flow run's training in {run_dir} from {checkpoint.name}"
    else:
        action = f"continuing the run in {run_dir} (started by flow run {owner}) from {checkpoint.name}"
    if owner is None or continue_run:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(marker, json.dumps({"flow_run_id": here, "name": runtime.flow_run.name}).encode())
    return action


def pool_card(pool: dict[str, Any], pool_dir: Path | None) -> str:
    """The pool artifact as a sentence ("27 references (14 love, 13 okay)"), not as a Python dict."""
    tiers = ", ".join(f"{count} {tier}" for tier, count in pool["tiers"].items())
    return (
        f"Pool revision `{pool['revision']}`: {pool['references']} references ({tiers}) from "
        f"`{pool_dir or 'the bundled pool'}`."
    )


def space_of(parameters: dict[str, Any]) -> SpaceSettings | None:
    """The Space a train flow run's parameters name (its preset and overrides); None when they name none, or when
    the configuration does not load (such a run failed on it and never reached a Space)."""
    try:
        return load_config(str(parameters.get("preset", "smoke")), parameters.get("overrides") or {}).space
    except ValueError:
        return None


def sleep_scorer_space(flow, flow_run, state) -> None:
    """State hook: the same idempotent sleep as the flow's `finally`, for when the flow body never got there."""
    space = space_of(flow_run.parameters)
    if space is None:
        return
    logger = flow_run_logger(flow_run, flow)
    try:
        logger.info("Space %s on %s: %s", space.repo_id, state.name, sleep_space(space))
    except Exception as error:  # a hook must not raise; the Space's idle timeout is the last line
        logger.error("could not sleep Space %s (%s); its idle timeout will", space.repo_id, error)


@flow(name="train", log_prints=True, persist_result=True)
def train(
    preset: Preset = SMOKE,  # type: ignore[valid-type]
    overrides: dict[str, Any] | None = None,
    run_dir: str | None = None,
    continue_run: bool = False,
    fan_out: FanOutSettings | None = None,
    publish: PublishSettings | None = None,
    fail_at_step: int | None = None,
) -> dict[str, Any] | State:
    """Train one GRPO run of a preset, in a directory of its own; resume it by retrying the flow run.

    Args:
        preset: The run preset (deployments/presets): weights, backends, policy and GRPO settings.
        overrides: Configuration overrides by dotted key, e.g. {"training.steps": 2, "space.repo_id": "me/scorer"}.
        run_dir: The run directory; empty gives this flow run its own under the configuration's run_dir.
        continue_run: Train on from the checkpoints another flow run left in run_dir (logged first).
        fan_out: Where each step's reward tasks run: threads (default) or a Dask cluster.
        publish: Hub repositories to publish the adapter and the rollouts to when the run ends (off when empty).
        fail_at_step: Fail the first attempt in the step after this one, once its rollouts are recorded (so this
            step's checkpoint is the latest), to rehearse a resume.
    """
    logger = get_run_logger()
    config = load_config(str(getattr(preset, "value", preset)), overrides or {})
    directory = flow_run_dir(config, run_dir)
    config = config.model_copy(update={"run_dir": directory})
    logger.info(claim_run_dir(directory, continue_run))
    checkpoint = latest_checkpoint(directory)
    start = checkpoint.name if checkpoint is not None else None
    if replaced := forget_replayed(runtime.flow_run.id):
        resume = f"it trains on from {start}" if start is not None else "it had saved no checkpoint: it starts afresh"
        logger.info(f"replacing {replaced} artifacts of this flow run's earlier attempt: {resume}")
    keys = flow_run_artifacts(config.name)
    space = config.space
    # An attempt that ended after its last step's checkpoint (a publish that failed, a crash in the teardown) left
    # nothing to score: its retry writes what the run leaves without waking the Space, whose start takes minutes.
    trained_out = checkpoint is not None and checkpoint_step(checkpoint) >= config.training.steps
    try:
        if trained_out:
            logger.info(f"every step is trained ({start}): the services are not checked and the Space is not woken")
            services = {name: f"not called: every step was trained ({start})" for name in ("scorer", "judge")}
        else:
            # The renderer first: it is local and quick, and without it every rollout would be a dead letter.
            renderer = check_local_renderer(config) if config.openenv is None else None
            if space is not None:
                set_space_backstop(space)
            services = check_services(config, space)
            if renderer is not None:
                services["renderer"] = renderer
        pool = load_reference_pool(config.pool_dir)
        create_markdown_artifact(
            pool_card(pool, config.pool_dir),
            key=artifact_key(keys, "pool"),
            description="The reference pool of this run",
        )
        if needs_warm_start(config):
            config = warm_start_policy(config, directory)
        training = grpo_train(config, directory, start, fan_out or FanOutSettings(), fail_at_step, return_state=True)
        if training.is_failed():
            # The task ended on its one-line error (its state's message); the run ends on the same line.
            return Failed(message=training.message)
        trained = training.result()
        assert isinstance(trained, dict), "a completed training returns where it wrote"
        published = publish_run(directory, publish) if publish is not None else None
    finally:
        if space is not None:
            # return_state: a failing sleep is logged, and never hides the error that brought us here.
            put_space_to_sleep(space, return_state=True)
    return {
        "run": config.name,
        "run_dir": str(directory),
        "services": services,
        "pool": pool,
        **trained,
        "published": published,
    }


# The remote presets' deployments: the same flow with the state hooks that put the run's Space to sleep.
train_with_space = train.with_options(
    on_completion=[sleep_scorer_space],
    on_failure=[sleep_scorer_space],
    on_cancellation=[sleep_scorer_space],
    on_crashed=[sleep_scorer_space],
)
