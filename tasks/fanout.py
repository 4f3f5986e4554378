"""One training step's reward work, fanned out as Prefect tasks: one `score_group` task per GRPO group.

`FannedScorer` is the scorer (`rewards.scoring.composite.Scorer`) of a run that Prefect drives: TRL's reward adapter
is the same as in any run, and behind it this submits `score_group` for each of the batch's groups to a Prefect task runner
(threads by default, Dask by configuration), so each group's render, gate, aesthetic scores and judge verdicts are
one task with its own retries, visible in the UI. Per group, not per rollout: the engine makes one batched
aesthetic request for the group, and identical completions meet in one engine and render once. A task that still fails after its Prefect retries gives each of
its rollouts a dead letter, and their rewards are None. Every record is numbered `records.rollout_step`.

The scoring itself is the process's `rewards.scoring.engine_thread` (Dask workers start their own on first use).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.concurrency.sync import concurrency
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel, Field

from ground.records import RewardParts
from ground.run_config import RunConfig
from rewards.judging.judge import judge_settings
from rewards.scoring.dead_letters import DeadLetterLog, dead_letter
from rewards.scoring.engine_thread import engine_thread


# Global Prefect concurrency limit held by every rollout that calls a remote judge, across all runs.
JUDGE_LIMIT = "judge"


class FanOutSettings(BaseModel):
    """Where a step's reward tasks run."""

    engine: Literal["threads", "dask"] = Field(default="threads", description="Prefect task runner for the fan-out.")
    max_workers: int = Field(default=4, ge=1, description="Threads of the thread runner.")
    dask_address: str | None = Field(default=None, description="An existing Dask scheduler; None starts a local one.")
    dask_workers: int = Field(default=2, ge=1, description="Worker processes of the local Dask cluster.")
    retries: int = Field(default=2, ge=0, description="Prefect retries of one group's reward task.")


@dataclass(frozen=True)
class StepState:
    """The one field of TRL's TrainerState that the reward reads, in a form that crosses processes."""

    global_step: int | None


@task(task_run_name="score-step{step}-group{group}", cache_policy=NO_CACHE, retry_jitter_factor=0.5)
def score_group(
    config: RunConfig,
    run_dir: Path,
    completions: list[str],
    seeds: list[int],
    step: int | None,
    group: int,
    subjects: list[str | None] | None = None,
) -> list[RewardParts]:
    """Render, gate and score one group's rollouts in one engine call (one batched aesthetic request). Service
    failures come back as dead letters inside the parts."""
    return engine_thread().score(config.scoring, run_dir, completions, seeds, step, subjects)


@contextmanager
def judge_slot(config: RunConfig) -> Iterator[None]:
    """One slot of the global `judge` limit while a group that calls a remote judge is scored; nothing otherwise.

    Taken by the caller before the group's task exists, not inside it: a task's first moments write its run and
    states to the server, and a slot asked for then waited on that SQLite write, after the step's last completion
    (docs/orchestration.md, "Concurrency", has the measurement).
    strict=False: without the limit (a bare install) this only logs a warning and goes on."""
    if config.weights.judge > 0 and judge_settings(config).backend != "offline":
        with concurrency(JUDGE_LIMIT, occupy=1, strict=False):
            yield
    else:
        yield


def make_task_runner(settings: FanOutSettings):
    """The task runner the fan-out submits to; enter it (`with`) for the length of the run."""
    if settings.engine == "threads":
        return ThreadPoolTaskRunner(max_workers=settings.max_workers)
    from prefect_dask import DaskTaskRunner

    if settings.dask_address:
        return DaskTaskRunner(address=settings.dask_address)
    # One thread per worker process: each worker renders on its own browser pool and Python is the bottleneck.
    cluster_kwargs = {"n_workers": settings.dask_workers, "threads_per_worker": 1, "processes": True}
    return DaskTaskRunner(cluster_kwargs=cluster_kwargs)


class FannedScorer:
    """The `Scorer` (`rewards.scoring.composite`) that runs `score_group` for each of a batch's GRPO groups on
    `runner`, each while its `judge_slot` is held.

    Built inside the Prefect run (the training task), whose context it keeps: TRL calls the reward on an event loop
    of its own thread, where Prefect would not know the flow run the group tasks belong to. `prefetch` goes to this
    process's engine thread, the engine a thread runner's `score_group` uses too, so a group task joins a render or
    a service call the prefetch started; Dask workers find a prefetch's results in the run's content cache.
    """

    def __init__(self, config: RunConfig, run_dir: Path, *, runner: Any, retries: int = 2) -> None:
        self.config, self.run_dir, self.runner = config, Path(run_dir), runner
        self.group_size = config.training.num_generations
        self.task = score_group.with_options(retries=retries, retry_delay_seconds=[2.0, 8.0, 30.0][: max(retries, 1)])
        self.context = contextvars.copy_context()

    async def score(
        self,
        completions: Sequence[str],
        seeds: Sequence[int],
        step: int | None,
        subjects: Sequence[str | None] | None = None,
    ) -> list[RewardParts]:
        batch = [subjects[i] if subjects is not None else None for i in range(len(completions))]
        # A copy each call: one Context cannot be entered by two threads at once.
        return await asyncio.to_thread(self.context.copy().run, self.map_groups, completions, seeds, step, batch)

    def map_groups(
        self, completions: Sequence[str], seeds: Sequence[int], step: int | None, subjects: list[str | None]
    ) -> list[RewardParts]:
        """Every rollout's parts, in order; a group whose task failed after its retries is dead-lettered whole."""
        size = self.group_size
        groups = [
            list(range(start, min(start + size, len(completions)))) for start in range(0, len(completions), size)
        ]
        per_group = [
            {
                "config": self.config,
                "run_dir": self.run_dir,
                "completions": [completions[i] for i in group],
                "seeds": [seeds[i] for i in group],
                "step": step,
                "group": index,
                "subjects": [subjects[i] for i in group],
            }
            for index, group in enumerate(groups)
        ]
        # One thread a group: each takes its judge slot, then submits its task and waits for it, so a group that
        # waits for a slot holds back no other.
        with ThreadPoolExecutor(max_workers=max(1, len(groups)), thread_name_prefix="score-group") as pool:
            runs = [pool.submit(contextvars.copy_context().run, self._group, one) for one in per_group]
            futures = [run.result() for run in runs]
        parts: list[RewardParts] = []
        for future, group in zip(futures, groups, strict=True):
            if future.state.is_completed():
                parts.extend(future.result())
            else:
                parts.extend(self._failed(future.state.result(raise_on_failure=False), len(group), step))
        return parts

    def _group(self, parameters: dict[str, Any]) -> Any:
        """One group's task, submitted while its judge slot is held, and waited for."""
        with judge_slot(self.config):
            future = self.runner.submit(self.task, parameters=parameters)
            future.wait()
        return future

    def _failed(self, error: Any, count: int, step: int | None) -> list[RewardParts]:
        cause = error if isinstance(error, Exception) else RuntimeError(str(error))
        failed = []
        for _ in range(count):
            letter = dead_letter("fan-out", cause, None, step, attempts=(self.task.retries or 0) + 1)
            DeadLetterLog(self.run_dir).append(letter)
            failed.append(RewardParts(reward=None, weights=self.config.weights.model_dump(), dead_letter=letter))
        return failed

    async def prefetch(
        self, completion: str, *, seed: int | None = None, step: int | None = None, subject: str | None = None
    ) -> None:
        future = engine_thread().prefetch(self.config.scoring, self.run_dir, completion, seed, subject)
        await asyncio.wrap_future(future)

    async def aclose(self) -> None:
        """The engine thread outlives a step; the training task closes it when the run ends."""
