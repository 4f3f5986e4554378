"""The TRL reward that paints through the OpenEnv server instead of in process (`RunConfig.openenv`).

Each rollout is one session: `reset(prompt, step)` (the server draws the judge's references from the same group seed as
`rewards.scoring.composite`), one `step` with the completion, the observation's parts back. So a run scored this way
gets the rewards it would get in process, for the same seeds (tests/test_openenv_training.py holds it to that), while
the rendering happens wherever the server runs. A rollout the server could not be reached for, after `openenv.attempts`
tries, is None with a dead letter, as for any infrastructure failure; a server that scores with other weights than the
run's is an error, not a silent change of the reward.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from ground.records import RewardParts, rollout_step
from ground.run_config import OpenEnvSettings, RunConfig
from openenv_painting.client import AtCapacity, PaintingClient
from openenv_painting.models import PaintAction, PaintObservation
from rewards.length import completion_text
from rewards.scoring.composite import OnScored
from rewards.scoring.dead_letters import DeadLetterLog, dead_letter
from rewards.scoring.scoring_engine import log_means


# What a try that did not reach the server raises: refused or dropped connections, a timeout, the session cap.
UNREACHED = (ConnectionError, OSError, TimeoutError, AtCapacity)


class ServerMismatch(RuntimeError):
    """The server scores with other weights than this run's: its rewards would not be this run's rewards."""


class OpenEnvReward:
    """TRL reward function over the OpenEnv painting server; the same contract as `CompositeReward`."""

    __name__ = "watercolour_reward"

    def __init__(self, config: RunConfig, run_dir: Path, on_scored: OnScored | None = None) -> None:
        assert config.openenv is not None, "OpenEnvReward needs RunConfig.openenv"
        self.settings: OpenEnvSettings = config.openenv
        self.weights = config.weights.model_dump()
        self.dead_letters = DeadLetterLog(Path(run_dir))
        self.on_scored = on_scored

    async def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        step = rollout_step(kwargs.get("trainer_state"))
        limit = asyncio.Semaphore(self.settings.max_sessions)
        rollouts = zip(prompts, completions, strict=True)
        parts = list(await asyncio.gather(*(self._rollout(limit, p, completion_text(c), step) for p, c in rollouts)))
        if self.on_scored is not None:
            self.on_scored(prompts, completions, parts, kwargs)
        if "log_metric" in kwargs:
            log_means(kwargs["log_metric"], parts)
        return [part.reward for part in parts]

    async def _rollout(self, limit: asyncio.Semaphore, prompt: Any, text: str, step: int | None) -> RewardParts:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.attempts),
            wait=wait_random_exponential(multiplier=self.settings.backoff_s, max=30.0),
            retry=retry_if_exception_type(UNREACHED),
            reraise=True,
        )
        made = 0
        try:
            async with limit:
                async for attempt in retrying:
                    with attempt:
                        made += 1
                        observation = await self._paint(prompt, text, step)
        except UNREACHED as error:
            letter = dead_letter("openenv", error, None, step, attempts=made)
            self.dead_letters.append(letter)
            return RewardParts(reward=None, dead_letter=letter, weights=dict(self.weights))
        parts = parts_of(observation)
        if parts.weights != self.weights:
            raise ServerMismatch(
                f"the server at {self.settings.url} scores with weights {parts.weights}, this run with "
                f"{self.weights}: start the server with the run's preset and overrides"
            )
        if parts.dead_letter is not None:  # the server's own record stays there; the run keeps its copy
            self.dead_letters.append(parts.dead_letter)
        return parts

    async def _paint(self, prompt: Any, text: str, step: int | None) -> PaintObservation:
        client = PaintingClient(base_url=self.settings.url, message_timeout_s=self.settings.message_timeout_s)
        try:
            await client.reset(prompt=prompt, step=step, pictures=True)
            result = await client.step(PaintAction(sketch=text))
        finally:
            await client.close()
        return result.observation


def parts_of(observation: PaintObservation) -> RewardParts:
    """The painting's `RewardParts` as the engine made them, the PNG put back from the observation."""
    assert observation.parts is not None, "a painting's observation carries its parts"
    parts = RewardParts.model_validate(observation.parts)
    render = parts.verdict.render if parts.verdict is not None else None
    if render is not None and observation.picture_png is not None:
        render.png = base64.b64decode(observation.picture_png)
    return parts
