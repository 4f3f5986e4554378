"""The wire types of the painting environment: what crosses the socket, defined once for server and client.

An action is one painting: a p5.brush sketch, or a whole completion holding one (the engine extracts the sketch
either way, as the in-process reward does). The observation is the repaint observation's text and fields, the
turn's reward parts, and (only when the session asked for pictures) the PNG. Everything is bounded here, so a
malformed or oversized action is a validation error answered on the socket, never a crash.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


# The gate refuses a sketch above its own size limit (GateSettings); this bound only keeps a hostile frame from
# reaching the parser at all. 256 KiB is four times the longest completion a 8192-token budget can produce.
MAX_ACTION_CHARS = 256 * 1024


class PaintAction(Action):
    """Paint once: `sketch` is the p5.brush sketch, or a completion with the sketch in a ```javascript block."""

    sketch: str = Field(max_length=MAX_ACTION_CHARS, description="A p5.brush sketch, or a completion holding one.")


class PaintObservation(Observation):
    """What the policy is told after a reset (instructions) or a painting (the repaint observation).

    `reward` is the episode's reward so far (the repaint settings say which: the final painting's, or with the
    improvement over the first); None when a turn could not be measured (infrastructure: `dead_letter` says why).
    """

    text: str = Field(description="The observation in plain words: instructions after reset, the painting after.")
    turn: int = Field(default=0, ge=0, description="Paintings made so far in this episode.")
    turns: int = Field(ge=1, description="Paintings the episode allows.")
    passed: bool | None = Field(default=None, description="Whether the gate admitted this painting (None: reset).")
    turn_reward: float | None = Field(default=None, description="This painting's composite reward alone.")
    picture_sha256: str | None = Field(default=None, description="SHA-256 of the rendered PNG, when one was made.")
    picture_png: str | None = Field(
        default=None, description="The rendered PNG, base64; only for sessions reset with pictures=true."
    )
    parts: dict[str, Any] | None = Field(
        default=None, description="The turn's reward parts (records.RewardParts, without the PNG bytes)."
    )


class PaintState(State):
    """One session's episode, as `state` reports it: its own and nothing of any other session."""

    turn: int = Field(default=0, ge=0, description="Paintings made so far.")
    turns: int = Field(default=1, ge=1, description="Paintings the episode allows.")
    group_seed: int = Field(default=0, description="The seed the judge's references were drawn with.")
    rollout_step: int | None = Field(default=None, description="The training step this episode belongs to.")
    reward: float | None = Field(default=None, description="The episode's reward so far.")
    rewards: list[float | None] = Field(default_factory=list, description="Each painting's composite reward.")
