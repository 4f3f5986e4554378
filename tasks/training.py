"""The GRPO run as one long Prefect task that resumes from the run's latest checkpoint.

TRL's `trainer.train()` is a single loop, so a failed flow run resumes through two things: GRPO checkpoints in
the run directory, and this task's `checkpoint` input, which names the checkpoint it starts from. A retried
flow run therefore misses this task's cache (its checkpoint moved on) and trains on from where it stopped,
while the tasks before it (health, pool) come back Cached.

Inside, the trainer's one reward adapter scores through a `FannedScorer` (`watercolour.training.scoring_route`
chooses it unless the run scores through the OpenEnv server): each step's rollouts are mapped as Prefect tasks on
the configured task runner, and `StepReporter` publishes the step's artifacts.

A training failure leaves its full traceback in the run directory's `failure.log` and ends the task in a Failed state
whose message is one line: what failed, the latest checkpoint, how to resume. The task returns that state rather
than raising: Prefect logs a raised exception once more with a traceback of its own engine's frames, and the line
would then be read three times and a traceback once before the flow's own final state repeats it.
"""

from __future__ import annotations

import contextlib
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import get_run_logger, runtime, task
from prefect.cache_policies import DEFAULT, NO_CACHE
from prefect.states import Failed, State

from ground.run_config import RunConfig
from rewards.scoring.composite import OnScored
from rewards.scoring.engine_thread import close_engine_thread
from tasks.fanout import FannedScorer, FanOutSettings, make_task_runner
from tasks.observe import StepReporter, flow_run_artifacts
from watercolour.run_records.run_dir import latest_checkpoint, use_run_environment


FAILURE_LOG = "failure.log"
CONSOLE_LOG = "console.log"


# Not cached by Prefect: the warm starts have a cache of their own, shared by every run on the machine.
@task(cache_policy=NO_CACHE, log_prints=False)
def warm_start_policy(config: RunConfig, run_dir: Path) -> RunConfig:
    """The configuration starting from the warm start the preset asks for (`warm_start_cache.warm_started`), made on
    the first run of a setting and reused after that."""
    use_run_environment(Path(run_dir))  # before TRL's import: trackio reads its directory once
    from watercolour.training.warm_start_cache import warm_started

    return warm_started(config, Path(run_dir), echo=get_run_logger().info)


# log_prints off: the libraries under the trainer print to stdout (trackio's banner with terminal colour codes, a
# disassembly that datasets' fingerprinting printed once a run), which the flow's log_prints turned into a dozen
# INFO lines of noise. The run's own progress is logged on purpose: one summary line per step.
@task(persist_result=True, cache_policy=DEFAULT, log_prints=False)
def grpo_train(
    config: RunConfig,
    run_dir: Path,
    checkpoint: str | None,
    fan_out_settings: FanOutSettings,
    fail_at_step: int | None = None,
) -> dict[str, Any] | State:
    """Train (on from `checkpoint` when there is one) and return where the adapter and the curves are, or a Failed
    state that says in one line what failed and how to resume."""
    logger = get_run_logger()
    run_dir = Path(run_dir)
    use_run_environment(run_dir)  # before the trainer's import: trackio reads its directory once
    from watercolour.training import run as training

    logger.info("training %s in %s from %s", config.name, run_dir, checkpoint or "scratch")
    # Fault injection only on a run's first attempt, so that its retry shows the resume.
    inject = fail_at_step if fail_at_step is not None and runtime.flow_run.run_count <= 1 else None

    reporters: list[StepReporter] = []
    with make_task_runner(fan_out_settings) as runner:

        def step_hook(config: RunConfig, run_dir: Path, then: OnScored | None) -> OnScored:
            reporters.append(StepReporter(flow_run_artifacts(config.name), run_dir, config.training.steps, then=then))
            return reporters[-1]

        def fan_out(config: RunConfig, run_dir: Path) -> FannedScorer:
            return FannedScorer(config, run_dir, runner=runner, retries=fan_out_settings.retries)

        try:
            # echo: each step's summary line (the curves' numbers) goes to the flow's logs. What the libraries under
            # the trainer print (trackio's banner with its terminal colours) goes to the run's console.log instead of
            # the worker's log. A repaint run's environments score its episodes; the same step artifacts follow.
            with (run_dir / CONSOLE_LOG).open("a") as console, contextlib.redirect_stdout(console):
                written = training.train(
                    config,
                    resume=checkpoint is not None,
                    echo=logger.info,
                    fan_out=fan_out,
                    step_hook=step_hook,
                    fail_at_step=inject,
                )
        except Exception as error:
            return Failed(message=failure(run_dir, error))
        finally:
            for reporter in reporters:  # the steps' artifacts, published off the steps' path, all out
                reporter.close()
            close_engine_thread()
    latest = latest_checkpoint(run_dir)
    return {
        **{name: str(path) for name, path in written.items()},
        "resumed_from": checkpoint,
        "checkpoint": latest.name if latest is not None else None,
    }


def failure(run_dir: Path, error: Exception) -> str:
    """Append the traceback to the run's failure.log; return the one line the flow run's log and state carry."""
    log = run_dir / FAILURE_LOG
    with log.open("a") as out:
        out.write(f"--- attempt {runtime.flow_run.run_count} of flow run {runtime.flow_run.id}, ")
        out.write(f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC\n{traceback.format_exc()}\n")
    latest = latest_checkpoint(run_dir)
    resume = (
        f"Latest checkpoint: {latest}; Retry this flow run (the UI's Retry, or "
        f"`prefect flow-run retry {runtime.flow_run.id}`) to train on from it"
        if latest is not None
        else f"No checkpoint yet in {run_dir}; a Retry of this flow run trains from scratch"
    )
    return f"training failed: {type(error).__name__}: {error}. {resume}. Traceback: {log}"
