"""The repaint episode for TRL's `environment_factory`, stepped through the OpenEnv server instead of in process.

`RemotePaintingEnv` has the public surface of `watercolour.painting_env.PaintingEnv` (TRL turns public methods
into tools, so there are the same two: `reset(**columns) -> str` and the `paint(sketch)` tool), and
`RemoteEpisodeFactory` that of `EpisodeFactory`, so a trainer swaps one for the other when `RunConfig.openenv` is
set. `reset` answers at once with the instructions (`painting_env.instructions`, the text the in-process episode
gives) and the session opens on the first painting, on the loop TRL runs its tools on; a server allowing another
number of turns than the run is refused there. One session per episode, closed after its last painting (or at the next `reset`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openenv_painting.client import PaintingClient
from openenv_painting.models import PaintAction
from watercolour.config import OpenEnvSettings, RepaintSettings
from watercolour.painting_env import instructions


class ServerTurnsMismatch(RuntimeError):
    """The server's episodes allow another number of paintings than this run's repaint settings."""


class RemotePaintingEnv:
    """One repaint episode in a session of the OpenEnv painting server."""

    def __init__(
        self, server: OpenEnvSettings, settings: RepaintSettings, step: Callable[[], int | None] = lambda: None
    ) -> None:
        self._server = server
        self._settings = settings
        self._step = step
        self._columns: dict[str, Any] = {}
        self._client: PaintingClient | None = None
        self._rewards: list[float | None] = []
        self._reward: float | None = None
        self._stale: list[PaintingClient] = []

    def reset(self, **columns: Any) -> str:
        """Start an episode for one dataset row; its prompt (and the step) seed the judge's references."""
        if self._client is not None:
            self._stale.append(self._client)  # closed on the tools' loop, at the next painting
        self._client = None
        self._columns = {"prompt": columns.get("prompt"), "step": self._step()}
        self._rewards, self._reward = [], None
        return instructions(self._settings)

    async def paint(self, sketch: str) -> str:
        """Paint a watercolour: render the p5.brush sketch, score it, and see what it looked like.

        Args:
            sketch: The complete p5.brush sketch (JavaScript) with its setup and draw functions.

        Returns:
            What the painting looked like: whether it passed the checks, its score, the measured facts of the picture
            and the judge's verdict.
        """
        while self._stale:
            await self._stale.pop().close()
        if self._client is None:
            self._client = PaintingClient(base_url=self._server.url, message_timeout_s=self._server.message_timeout_s)
            opened = await self._client.reset(**self._columns)
            if opened.observation.turns != self._settings.turns:
                raise ServerTurnsMismatch(
                    f"the server at {self._server.url} allows {opened.observation.turns} paintings an episode, this "
                    f"run {self._settings.turns}: start it with the run's repaint settings"
                )
        result = await self._client.step(PaintAction(sketch=sketch))
        observation = result.observation
        if observation.turn_reward is not None or observation.parts is not None:
            self._rewards.append(observation.turn_reward)
            self._reward = observation.reward
        if result.done:  # the last painting allowed: give the server its slot back now
            await self._client.close()
            self._client = None
        return observation.text

    @property
    def rewards(self) -> list[float | None]:
        """Each painting's composite reward, in order."""
        return list(self._rewards)

    @property
    def reward(self) -> float | None:
        """The episode's reward so far, as the server's episode computed it (`painting_env.episode_reward`)."""
        return self._reward if self._rewards else 0.0


class RemoteEpisodeFactory:
    """TRL's `environment_factory` over the server: a new `RemotePaintingEnv`; `trainer_state` numbers the step."""

    def __init__(self, server: OpenEnvSettings, settings: RepaintSettings) -> None:
        self.server = server
        self.settings = settings
        self.trainer_state: Any = None

    def step(self) -> int | None:
        from watercolour.records import rollout_step

        return rollout_step(self.trainer_state)

    def __call__(self) -> RemotePaintingEnv:
        return RemotePaintingEnv(self.server, self.settings, self.step)
