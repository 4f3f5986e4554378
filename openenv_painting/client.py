"""The client of the painting environment: OpenEnv's `EnvClient` over the wire models, and nothing of the server.

`PaintingClient(base_url)` is one session (one WebSocket): `await client.reset(prompt=..., step=...)`, then
`await client.step(PaintAction(sketch=...))` per painting; `client.sync()` gives the blocking form. A server at
its session cap answers the connection with an error frame; `AtCapacity` says so in words.
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from openenv_painting.models import PaintAction, PaintObservation, PaintState


class AtCapacity(RuntimeError):
    """The server holds as many sessions as it allows; retry later, or raise its --max-sessions."""


class PaintingClient(EnvClient[PaintAction, PaintObservation, PaintState]):
    """One session of the painting environment."""

    def _step_payload(self, action: PaintAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[PaintObservation]:
        observation = PaintObservation(
            **payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False)
        )
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> PaintState:
        return PaintState(**payload)

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            return await super()._send_and_receive(message)
        except RuntimeError as error:
            if "CAPACITY_REACHED" in str(error):
                raise AtCapacity(f"{self.base_url}: {error}") from None
            raise
