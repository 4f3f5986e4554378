"""The repaint episode for TRL's `environment_factory`, stepped through the OpenEnv server instead of in process.

`RemotePaintingEnv` has the public surface of `episodes.painting_env.PaintingEnv` (TRL turns public methods into tools,
so there are the same two: `reset(**columns) -> str` and the `paint(sketch)` tool), and `RemoteEpisodeFactory` that of
`EpisodeFactory`, so a trainer swaps one for the other when `RunConfig.openenv` is set. `reset` answers at once with
the instructions (`painting_env.instructions`, the text the in-process episode gives) and the session opens on the
first painting, on the loop TRL runs its tools on; a server allowing another number of turns than the run is refused
there. One session per episode, closed after its last painting (or at the next `reset`).

Each painting comes back whole: the engine's parts with the PNG (the session asks for pictures), so `turns` holds
what the in-process episode's does (the rollout store records it the same), and a VLM policy (`repaint.vision`)
is shown the PNG as an image content block, as in process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from episodes.observation import observe
from episodes.painting_env import Turn, episode_reward, instructions, tool_result
from ground.run_config import OpenEnvSettings, RepaintSettings
from openenv_painting.client import PaintingClient
from openenv_painting.models import PaintAction
from openenv_painting.scorer import parts_of


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
        self._turns: list[Turn] = []
        self._stale: list[PaintingClient] = []

    def reset(self, seed: int | None = None, **columns: Any) -> str:
        """Start an episode for one dataset row; its prompt (and the step) seed the judge's references, unless
        `seed` is given (`PaintingEnv.reset`)."""
        if self._client is not None:
            self._stale.append(self._client)  # closed on the tools' loop, at the next painting
        self._client = None
        self._columns = {
            "prompt": columns.get("prompt"),
            "step": self._step(),
            "seed": seed,
            "subject": columns.get("subject"),
            "pictures": True,
        }
        self._turns = []
        return instructions(self._settings)

    async def paint(self, sketch: str) -> str | list[dict[str, Any]]:
        """Paint a watercolour: render the p5.brush sketch, score it, and see what it looked like.

        Args:
            sketch: The complete p5.brush sketch (JavaScript) with its setup and draw functions.

        Returns:
            What the painting looked like, and its score.
        """
        while self._stale:
            await self._stale.pop().close()
        if self._client is None:
            self._client = PaintingClient(base_url=self._server.url, message_timeout_s=self._server.message_timeout_s)
            opened = await self._client.reset(**self._columns)
            if opened.observation.turns != self._settings.turns:
                await self._client.close()  # the session goes back to the server's cap
                self._client = None
                raise ServerTurnsMismatch(
                    f"the server at {self._server.url} allows {opened.observation.turns} paintings an episode, this "
                    f"run {self._settings.turns}: start it with the run's repaint settings"
                )
        result = await self._client.step(PaintAction(sketch=sketch))
        if result.done:  # the last painting allowed: give the server its slot back now
            await self._client.close()
            self._client = None
        if result.observation.parts is None:  # no paintings left: the episode's answer, nothing scored
            return result.observation.text
        parts = parts_of(result.observation)
        observation = observe(parts, turn=result.observation.turn, turns=self._settings.turns)
        self._turns.append(Turn(sketch=sketch, parts=parts, observation=observation))
        self._turns.sort(key=lambda done: done.observation.turn)  # TRL runs one reply's calls concurrently
        return tool_result(observation, self._settings)

    @property
    def turns(self) -> list[Turn]:
        """The episode's paintings so far, in order, as the server's engine scored them (PNG included)."""
        return list(self._turns)

    @property
    def reward(self) -> float | None:
        """The episode's reward so far (`painting_env.episode_reward`, as the server's episode computes it)."""
        return episode_reward([turn.parts.reward for turn in self._turns], self._settings)

    async def _aclose(self) -> None:
        """Close the episode's session, if one is still open (private: TRL makes every public method a tool)."""
        clients, self._stale = [*self._stale, *([self._client] if self._client else [])], []
        self._client = None
        for client in clients:
            await client.close()


class RemoteEpisodeFactory:
    """TRL's `environment_factory` over the server: a new `RemotePaintingEnv`; `trainer_state` numbers the step."""

    def __init__(self, server: OpenEnvSettings, settings: RepaintSettings) -> None:
        self.server = server
        self.settings = settings
        self.trainer_state: Any = None

        self._episodes: list[RemotePaintingEnv] = []

    def step(self) -> int | None:
        from ground.records import rollout_step

        return rollout_step(self.trainer_state)

    # The server renders; there is nothing to paint ahead on this side.
    paint_ahead = None

    async def aclose(self) -> None:
        """Close every session the episodes still hold (an episode the policy stopped before its last painting)."""
        for episode in self._episodes:
            await episode._aclose()

    def __call__(self) -> RemotePaintingEnv:
        episode = RemotePaintingEnv(self.server, self.settings, self.step)
        self._episodes.append(episode)
        return episode
