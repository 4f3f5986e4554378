"""The `Scorer` that paints through the OpenEnv server instead of in process (`RunConfig.openenv`).

Each rollout is one session: `reset(seed, step, subject)` (the group seed the TRL adapter derived, so the server draws
the judge's references as the engine in process would), one `step` with the completion, the observation's parts back.
So a run scored this way gets the rewards it would get in process, for the same seeds (tests/scoring/test_scoring_routes.py
holds it to that), while the rendering happens wherever the server runs. A prefetch paints the rollout's session
ahead and keeps the answer for the batch's `score`, which takes it instead of painting again; a prefetch that could
not reach the server records nothing, and `score` tries again. A rollout the server could not be reached for, after
`openenv.attempts` tries, is None with a dead letter, as for any infrastructure failure; a server that scores with
other weights than the run's is an error, not a silent change of the reward.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from pathlib import Path

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from ground.records import RewardParts
from ground.run_config import OpenEnvSettings
from openenv_painting.client import AtCapacity, PaintingClient
from openenv_painting.models import PaintAction, PaintObservation
from rewards.scoring.dead_letters import DeadLetterLog, dead_letter


# What a try that did not reach the server raises: refused or dropped connections, a timeout, the session cap.
UNREACHED = (ConnectionError, OSError, TimeoutError, AtCapacity)
# One rollout as the server is asked about it: (completion, group seed, step, subject).
Rollout = tuple[str, int, int | None, str | None]


class ServerMismatch(RuntimeError):
    """The server scores with other weights than this run's: its rewards would not be this run's rewards."""


class OpenEnvScorer:
    """Scores each rollout in a session of the OpenEnv painting server; `weights` are the run's, checked per answer."""

    def __init__(self, settings: OpenEnvSettings, weights: dict[str, float], run_dir: Path) -> None:
        self.settings = settings
        self.weights = dict(weights)
        self.dead_letters = DeadLetterLog(Path(run_dir))
        self._limit: asyncio.Semaphore | None = None
        # Prefetched paintings by rollout, until the batch's `score` takes them.
        self._ahead: dict[Rollout, asyncio.Task[PaintObservation]] = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_limit": None, "_ahead": {}}

    async def score(
        self,
        completions: Sequence[str],
        seeds: Sequence[int],
        step: int | None,
        subjects: Sequence[str | None] | None = None,
    ) -> list[RewardParts]:
        rollouts = [
            (text, seed, step, subjects[i] if subjects is not None else None)
            for i, (text, seed) in enumerate(zip(completions, seeds, strict=True))
        ]
        parts = list(await asyncio.gather(*(self._rollout(rollout) for rollout in rollouts)))
        # What was painted ahead for rollouts no batch asked for (a step cut short) is not kept past its step.
        for rollout in [key for key in self._ahead if key[2] != step]:
            self._ahead.pop(rollout).cancel()
        return parts

    async def prefetch(
        self, completion: str, *, seed: int | None = None, step: int | None = None, subject: str | None = None
    ) -> None:
        """Paint the rollout's session now; the batch's `score` takes the answer. Without a seed there is nothing
        to ask the server: a session paints and scores in one step."""
        if seed is None:
            return
        rollout = (completion, seed, step, subject)
        if rollout not in self._ahead:
            self._ahead[rollout] = asyncio.ensure_future(self._paint_limited(rollout))
        try:
            await asyncio.shield(self._ahead[rollout])
        except UNREACHED:
            return

    async def aclose(self) -> None:
        for task in self._ahead.values():
            task.cancel()
        self._ahead.clear()

    async def _rollout(self, rollout: Rollout) -> RewardParts:
        ahead = self._ahead.pop(rollout, None)
        observation = None
        if ahead is not None:
            try:
                observation = await ahead
            except UNREACHED:  # met again below, with the retries and the dead letter
                observation = None
        made = 0
        if observation is None:
            retrying = AsyncRetrying(
                stop=stop_after_attempt(self.settings.attempts),
                wait=wait_random_exponential(multiplier=self.settings.backoff_s, max=30.0),
                retry=retry_if_exception_type(UNREACHED),
                reraise=True,
            )
            try:
                async for attempt in retrying:
                    with attempt:
                        made += 1
                        observation = await self._paint_limited(rollout)
            except UNREACHED as error:
                letter = dead_letter("openenv", error, None, rollout[2], attempts=made)
                self.dead_letters.append(letter)
                return RewardParts(reward=None, dead_letter=letter, weights=dict(self.weights))
        assert observation is not None
        parts = parts_of(observation)
        if parts.weights != self.weights:
            raise ServerMismatch(
                f"the server at {self.settings.url} scores with weights {parts.weights}, this run with "
                f"{self.weights}: start the server with the run's preset and overrides"
            )
        if parts.dead_letter is not None:  # the server's own record stays there; the run keeps its copy
            self.dead_letters.append(parts.dead_letter)
        return parts

    async def _paint_limited(self, rollout: Rollout) -> PaintObservation:
        # Made on the loop that uses it: TRL's reward loop.
        self._limit = self._limit or asyncio.Semaphore(self.settings.max_sessions)
        async with self._limit:
            return await self._paint(rollout)

    async def _paint(self, rollout: Rollout) -> PaintObservation:
        text, seed, step, subject = rollout
        client = PaintingClient(base_url=self.settings.url, message_timeout_s=self.settings.message_timeout_s)
        try:
            await client.reset(seed=seed, step=step, subject=subject, pictures=True)
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
