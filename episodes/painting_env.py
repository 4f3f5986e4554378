"""The painting environment: the scoring engine seen one episode at a time, for TRL's `environment_factory`.

TRL (1.16) makes one `PaintingEnv` per rollout and reuses instances across batches, so `reset(**columns)` clears the
episode and returns the text appended to the user's prompt. Every public method is a tool the policy may call; there is
one, `paint(sketch)`, which gates, renders and scores the sketch through `rewards.scoring.scoring_engine` and returns
the observation (`episodes.observation`): text, or text and the rendered PNG as an image block for a VLM policy. The
episode ends after `RepaintSettings.turns` paintings (the trainer caps its tool loop there too) or when the policy
stops calling the tool. `reward` is the episode's reward (`episode_reward`); the trainer's reward function
(`watercolour.training.repaint_reward`) reads it with the turns, records them and hands it to GRPO. The OpenEnv server
serves the same class.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from episodes.observation import Observation, observe
from ground.records import RewardParts
from ground.run_config import RepaintSettings
from rewards.scoring.composite import group_seed
from rewards.scoring.scoring_engine import ScoringEngine


@dataclass
class Turn:
    """One painting of an episode: what the policy sent, how it scored, and what it was told."""

    sketch: str
    parts: RewardParts
    observation: Observation


def episode_reward(rewards: list[float | None], settings: RepaintSettings) -> float | None:
    """The episode's reward from its paintings' composite rewards, in order.

    None when any painting could not be measured (its dead letter says why), as for a single-turn rollout; 0.0 when
    the policy never painted, as for a completion with no sketch.
    """
    if any(reward is None for reward in rewards):
        return None
    measured = [reward for reward in rewards if reward is not None]
    if not measured:
        return 0.0
    final = measured[-1]
    if settings.reward == "improvement":
        return final + settings.improvement_weight * (final - measured[0])
    return final


def instructions(settings: RepaintSettings) -> str:
    """What `reset` appends to the user's prompt: how to paint through the tool and how many times."""
    again = (
        f" You may paint up to {settings.turns} times: after each painting you are told what it looked like, and "
        "you can paint it again better."
        if settings.turns > 1
        else ""
    )
    return f"\n\nPaint by calling the paint tool with your complete sketch.{again}"


def tool_result(observation: Observation, settings: RepaintSettings) -> str | list[dict[str, Any]]:
    """What `paint` returns: the observation's text, or for a VLM policy (`vision`) the PNG as an image content
    block before it."""
    if settings.vision and observation.png is not None:
        from PIL import Image

        image = Image.open(io.BytesIO(observation.png)).convert("RGB")
        return [{"type": "image", "image": image}, {"type": "text", "text": observation.text()}]
    return observation.text()


class PaintingEnv:
    """One repaint episode. `step` gives the rollout step (None outside training), for seeds and dead letters."""

    def __init__(
        self, engine: ScoringEngine, settings: RepaintSettings, step: Callable[[], int | None] = lambda: None
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._step = step
        self._turns: list[Turn] = []
        self._started = 0
        self._seed = 0
        self._subject: str | None = None

    def reset(self, seed: int | None = None, **columns: Any) -> str:
        """Start an episode for one dataset row; its prompt (and the step) seed the judge's references, unless
        `seed` is given: then it is the episode's group seed, so an episode replays from its seed alone. The row's
        `subject` is what its paintings are scored as (None: the run's subject)."""
        self._turns = []
        self._started = 0
        self._seed = group_seed(columns.get("prompt"), self._step()) if seed is None else seed
        self._subject = columns.get("subject")
        return instructions(self._settings)

    @property
    def seed(self) -> int:
        """The episode's group seed, which draws the judge's references (`rewards.scoring.composite.group_seed`)."""
        return self._seed

    async def paint(self, sketch: str) -> str | list[dict[str, Any]]:
        """Paint a watercolour: render the p5.brush sketch, score it, and see what it looked like.

        Args:
            sketch: The complete p5.brush sketch (JavaScript) with its setup and draw functions.

        Returns:
            What the painting looked like, and its score.
        """
        if self._started >= self._settings.turns:
            return f"No paintings left: this episode allows {self._settings.turns}."
        # Counted before the await: TRL runs the calls of one reply concurrently, and each must see the others.
        self._started += 1
        turn = self._started
        parts = await self._engine.score_one(sketch, seed=self._seed, step=self._step(), subject=self._subject)
        observation = observe(parts, turn=turn, turns=self._settings.turns)
        self._turns.append(Turn(sketch=sketch, parts=parts, observation=observation))
        self._turns.sort(key=lambda done: done.observation.turn)
        return tool_result(observation, self._settings)

    @property
    def turns(self) -> list[Turn]:
        """The episode's paintings so far, in order."""
        return list(self._turns)

    @property
    def reward(self) -> float | None:
        """The episode's reward so far (`episode_reward`)."""
        return episode_reward([turn.parts.reward for turn in self._turns], self._settings)


class EpisodeFactory:
    """TRL's `environment_factory`: a new `PaintingEnv` on one shared engine; `trainer_state` numbers the step."""

    def __init__(self, engine: ScoringEngine, settings: RepaintSettings) -> None:
        self.engine = engine
        self.settings = settings
        self.trainer_state: Any = None

    def step(self) -> int | None:
        from ground.records import rollout_step

        return rollout_step(self.trainer_state)

    @property
    def paint_ahead(self) -> Callable[..., Any] | None:
        """What the trainer renders ahead with while the policy still writes (`watercolour.training.paint_ahead`)."""
        return self.engine.prefetch

    async def aclose(self) -> None:
        """Close the engine's browsers and clients (on the loop `paint` opened them on)."""
        await self.engine.aclose()

    def __call__(self) -> PaintingEnv:
        return PaintingEnv(self.engine, self.settings, self.step)
