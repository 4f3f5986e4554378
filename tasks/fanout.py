"""One training step's reward work, fanned out as Prefect tasks: one `score_rollout` task per rollout.

`FannedReward` has TRL's reward contract and is what the trainer is given when Prefect drives the run. It maps
`score_rollout` over the batch on a Prefect task runner (threads by default, Dask by configuration), so each
rollout's render, gate, aesthetic score and judge verdict is a task with its own retries, visible in the UI.
Inside a task the work is done by `CompositeReward`, unchanged: it keeps its own HTTP retries and dead letters.
A task that still fails after its Prefect retries becomes a dead letter too, and its reward is None.

Each process (the trainer's, or each Dask worker) keeps one `RewardEngine`: a private event loop in a thread
that owns the browser pool and the composite's clients. Playwright and httpx clients are bound to the loop that
made them, and task threads come and go, so they all hand their coroutines to that one loop.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prefect import task, unmapped
from prefect.cache_policies import NO_CACHE
from prefect.concurrency.sync import concurrency
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel, Field

from watercolour.config import RenderSettings, RunConfig
from watercolour.records import RewardParts


# Global Prefect concurrency limit held by every rollout that calls a remote judge, across all runs.
JUDGE_LIMIT = "judge"


class FanOutSettings(BaseModel):
    """Where a step's reward tasks run."""

    engine: Literal["threads", "dask"] = Field(default="threads", description="Prefect task runner for the fan-out.")
    max_workers: int = Field(default=4, ge=1, description="Threads of the thread runner.")
    dask_address: str | None = Field(default=None, description="An existing Dask scheduler; None starts a local one.")
    dask_workers: int = Field(default=2, ge=1, description="Worker processes of the local Dask cluster.")
    retries: int = Field(default=2, ge=0, description="Prefect retries of one rollout's reward task.")


@dataclass(frozen=True)
class StepState:
    """The one field of TRL's TrainerState that the composite reads, in a form that crosses processes."""

    global_step: int | None


class RewardEngine:
    """A process's private loop with its browser pool and one CompositeReward per (config, run directory)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="reward-engine", daemon=True).start()
        self.pool: Any = None
        self.rewards: dict[str, Any] = {}
        self.scored: dict[str, RewardParts] = {}
        self._pool_lock: asyncio.Lock | None = None

    def score(self, config: RunConfig, run_dir: Path, prompt: Any, completion: Any, step: int | None) -> RewardParts:
        return self.run(self._score(config, run_dir, prompt, completion, step))

    async def _score(self, config: RunConfig, run_dir: Path, prompt: Any, completion: Any, step: int | None):
        from rewards.composite import CompositeReward

        pool = await self.browser_pool(config.render)
        key = f"{run_dir}\n{config.model_dump_json()}"
        if key not in self.rewards:
            self.rewards[key] = CompositeReward(config, run_dir, on_scored=self._keep, pool=pool)
        rollout_id = uuid.uuid4().hex
        await self.rewards[key]([prompt], [completion], trainer_state=StepState(step), rollout_id=[rollout_id])
        return self.scored.pop(rollout_id)

    def _keep(self, prompts: list, completions: list, parts: list[RewardParts], kwargs: dict) -> None:
        self.scored[kwargs["rollout_id"][0]] = parts[0]

    def run(self, coroutine: Any) -> Any:
        """Run `coroutine` on the engine's loop, from any thread, and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def browser_pool(self, render: RenderSettings):
        """The process's browser pool, started by the first caller with that caller's render settings."""
        from renderers import BrowserPool

        self._pool_lock = self._pool_lock or asyncio.Lock()
        async with self._pool_lock:
            if self.pool is None:
                pool = BrowserPool(
                    browsers=render.browsers, pages_per_browser=render.pages_per_browser, deadline_s=render.deadline_s
                )
                await pool.start()
                self.pool = pool
        return self.pool

    def close(self) -> None:
        async def shutdown() -> None:
            for reward in self.rewards.values():
                await reward.aclose()
            if self.pool is not None:
                await self.pool.close()

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(timeout=60)
        self.rewards.clear()
        self.pool = None


_engine: RewardEngine | None = None
_engine_lock = threading.Lock()


def reward_engine() -> RewardEngine:
    """This process's engine, started on first use (a Dask worker starts its own the first time it scores)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = RewardEngine()
        return _engine


def close_reward_engine() -> None:
    global _engine
    with _engine_lock:
        if _engine is not None:
            _engine.close()
            _engine = None


@task(task_run_name="score-step{step}-{index}", cache_policy=NO_CACHE, retry_jitter_factor=0.5)
def score_rollout(
    config: RunConfig, run_dir: Path, prompt: Any, completion: Any, step: int | None, index: int
) -> RewardParts:
    """Render, gate and score one rollout. Service failures come back as a dead letter inside the parts."""
    remote_judge = config.weights.judge > 0 and config.judge.backend != "offline"
    if not remote_judge:
        return reward_engine().score(config, run_dir, prompt, completion, step)
    # strict=False: without the limit (a bare install) this only logs a warning and goes on.
    with concurrency(JUDGE_LIMIT, occupy=1, strict=False):
        return reward_engine().score(config, run_dir, prompt, completion, step)


def make_task_runner(settings: FanOutSettings):
    """The task runner the fan-out maps on; enter it (`with`) for the length of the run."""
    if settings.engine == "threads":
        return ThreadPoolTaskRunner(max_workers=settings.max_workers)
    from prefect_dask import DaskTaskRunner

    if settings.dask_address:
        return DaskTaskRunner(address=settings.dask_address)
    # One thread per worker process: each worker renders on its own browser pool and Python is the bottleneck.
    cluster_kwargs = {"n_workers": settings.dask_workers, "threads_per_worker": 1, "processes": True}
    return DaskTaskRunner(cluster_kwargs=cluster_kwargs)


OnScored = Callable[[list[Any], list[Any], list[RewardParts], dict[str, Any]], None]


class FannedReward:
    """TRL reward function: maps `score_rollout` over a batch on `runner` and returns one reward per rollout.

    Built like `CompositeReward(config, run_dir, on_scored)`, and calls `on_scored` the same way (once per batch,
    in the trainer's process), so a trainer can take either.
    """

    __name__ = "watercolour_reward"

    def __init__(
        self, config: RunConfig, run_dir: Path, on_scored: OnScored | None = None, *, runner: Any, retries: int = 2
    ) -> None:
        self.config, self.run_dir, self.runner, self.on_scored = config, Path(run_dir), runner, on_scored
        self.task = score_rollout.with_options(
            retries=retries, retry_delay_seconds=[2.0, 8.0, 30.0][: max(retries, 1)]
        )

    def score(self, prompts: list[Any], completions: list[Any], step: int | None) -> list[RewardParts]:
        from rewards.dead_letters import DeadLetterLog, dead_letter

        parameters = {
            "config": unmapped(self.config),
            "run_dir": unmapped(self.run_dir),
            "prompt": prompts,
            "completion": completions,
            "step": unmapped(step),
            "index": list(range(len(completions))),
        }
        futures = self.runner.map(self.task, parameters)
        futures.wait()
        parts = []
        for future in futures:
            if future.state.is_completed():
                parts.append(future.result())
                continue
            error = future.state.result(raise_on_failure=False)
            letter = dead_letter(
                "fan-out", error if isinstance(error, Exception) else RuntimeError(str(error)), None, step
            )
            letter.attempts = (self.task.retries or 0) + 1
            DeadLetterLog(self.run_dir).append(letter)
            parts.append(RewardParts(reward=None, weights=self.config.weights.model_dump(), dead_letter=letter))
        return parts

    def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        from rewards.composite import log_means

        state = kwargs.get("trainer_state")
        step = state.global_step if state is not None else None
        parts = self.score(prompts, completions, step)
        if "log_metric" in kwargs:
            log_means(kwargs["log_metric"], parts)
        if self.on_scored is not None:
            self.on_scored(prompts, completions, parts, kwargs)
        return [part.reward for part in parts]
