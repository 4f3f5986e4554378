"""One OpenEnv session: a repaint episode (`episodes.painting_env.PaintingEnv`) over the server's one engine.

The OpenEnv server builds one `PaintingEnvironment` per WebSocket session, from `SessionFactory`. Every session
shares the process's `ScoringEngine` (one browser pool, one content cache, one set of service clients) and owns
nothing else but its episode, so a session can only ever be told about its own paintings. `step_async` runs on
the server's event loop, where the engine lives: sessions painting at once are gathered there and bounded by the
render pool, and a hostile sketch costs its own page at most the render deadline.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from episodes.painting_env import PaintingEnv, Turn
from ground.run_config import RepaintSettings
from openenv_painting.models import PaintAction, PaintObservation, PaintState
from rewards.scoring.scoring_engine import ScoringEngine


# A subject names a flower ("a peach hibiscus"); the bound keeps a hostile reset from carrying a document into the
# judge's prompt and every record.
MAX_SUBJECT_CHARS = 200

logger = logging.getLogger("openenv_painting")

# The environment's name and version, as openenv.yaml (server/manifest.py) and /metadata give them.
NAME = "watercolour_painting"
VERSION = "0.1.0"
DESCRIPTION = (
    "Paint a watercolour as a p5.js sketch with p5.brush, through one tool, `paint`. Each painting is rendered in "
    "headless Chromium with no network, passed through an admission gate, scored (gate, length, a pairwise judge "
    "against a pool of reference watercolours, an aesthetic scorer) and described back in words with its reward: "
    "what the gate refused, what the picture measures, what the judge thought. Up to {turns} paintings an episode."
)


class SessionClosed(RuntimeError):
    """The session was closed (its client left, or it sat idle past the session timeout) and cannot paint."""


class PaintingEnvironment(Environment[PaintAction, PaintObservation, PaintState]):
    """A repaint episode for one session: `reset` starts it, each `step` paints once."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, engine: ScoringEngine, settings: RepaintSettings) -> None:
        super().__init__()
        self._settings = settings
        self._rollout_step: int | None = None
        self._episode = PaintingEnv(engine, settings, step=lambda: self._rollout_step)
        self._state = PaintState(turns=settings.turns)
        self._pictures = False
        self._closed = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        prompt: Any = None,
        step: int | None = None,
        pictures: bool = False,
        subject: str | None = None,
        **_: Any,
    ) -> PaintObservation:
        """Start an episode. `prompt` and `step` seed the judge's references exactly as in-process training does
        (`rewards.scoring.composite.group_seed`); `seed`, when given, is that group seed itself, so the same seed and
        the same paintings give the same rewards. A render's own seed is the run's (`render.seed`), the same for every
        session. `pictures` asks for each painting's PNG in the observation; `subject` is what the paintings are scored
        as (None: the server's configured subject); other keys (a dataset row's columns) are ignored."""
        self._check_open()
        if step is not None and (not isinstance(step, int) or isinstance(step, bool) or step < 0):
            raise ValueError(f"step must be a non-negative integer or null, got {step!r}")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            raise ValueError(f"seed must be a non-negative integer or null, got {seed!r}")
        if not isinstance(pictures, bool):
            raise ValueError(f"pictures must be true or false, got {pictures!r}")
        if subject is not None and (not isinstance(subject, str) or not 0 < len(subject) <= MAX_SUBJECT_CHARS):
            raise ValueError(f"subject must be a string of 1 to {MAX_SUBJECT_CHARS} characters or null")
        self._rollout_step = step
        text = self._episode.reset(seed=seed, prompt=prompt, subject=subject)
        self._pictures = pictures
        self._state = PaintState(
            episode_id=episode_id, turns=self._settings.turns, group_seed=self._episode.seed, rollout_step=step
        )
        return PaintObservation(text=text.strip(), turns=self._settings.turns)

    def step(self, action: PaintAction, timeout_s: float | None = None, **kwargs: Any) -> PaintObservation:
        raise NotImplementedError("the painting environment paints on the server's loop: the server calls step_async")

    async def step_async(self, action: PaintAction, timeout_s: float | None = None, **kwargs: Any) -> PaintObservation:
        """Paint `action.sketch` once and observe it; the episode is done after its last allowed painting."""
        self._check_open()
        before = len(self._episode.turns)
        try:
            text = await self._episode.paint(action.sketch)
        except Exception as error:  # OpenEnv answers the client with it and logs nothing: the operator would not know
            logger.error("a painting failed (its client was told): %s: %s", type(error).__name__, error)
            raise
        turns = self._episode.turns
        if len(turns) == before:  # no paintings left: the episode's answer, nothing scored
            return self._observation(str(text), None)
        turn = turns[-1]
        letter = turn.parts.dead_letter
        if letter is not None:
            logger.warning(
                "dead letter: %s failed after %d attempt(s) (sketch %s): %s",
                letter.stage,
                letter.attempts,
                letter.sketch_hash,
                letter.cause,
            )
        self._state.turn = len(turns)
        self._state.step_count = len(turns)
        self._state.rewards = [painted.parts.reward for painted in turns]
        self._state.reward = self._episode.reward
        return self._observation(turn.observation.text(), turn)

    def _observation(self, text: str, turn: Turn | None) -> PaintObservation:
        painted = len(self._episode.turns)
        png = turn.observation.png if turn is not None else None
        return PaintObservation(
            text=text,
            turn=painted,
            turns=self._settings.turns,
            done=painted >= self._settings.turns,
            reward=self._episode.reward if painted else None,
            passed=turn.parts.passed if turn is not None else None,
            turn_reward=turn.parts.reward if turn is not None else None,
            picture_sha256=hashlib.sha256(png).hexdigest() if png is not None else None,
            picture_png=base64.b64encode(png).decode() if png is not None and self._pictures else None,
            parts=turn.parts.model_dump(mode="json", exclude={"verdict": {"render": {"png"}}}) if turn else None,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=NAME, description=DESCRIPTION.format(turns=self._settings.turns), version=VERSION
        )

    @property
    def state(self) -> PaintState:
        return self._state

    def close(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed("this session was closed (idle past the session timeout): open a new session")


class SessionFactory:
    """What the OpenEnv server calls once per session: a new episode on the one shared engine."""

    def __init__(self, engine: ScoringEngine, settings: RepaintSettings) -> None:
        self.engine = engine
        self.settings = settings

    def __call__(self) -> PaintingEnvironment:
        return PaintingEnvironment(self.engine, self.settings)
