"""Aesthetic scorer backends behind one small interface: HPSv3 over HTTP (the scorer Space) or the offline stand-in.

The HPSv3 client speaks the wire format documented in `scorer_space/README.md`; the pydantic models below mirror it
(a client never imports server code). The score is the logistic of mu/4: zero mu is the Bradley-Terry centre, and
the scale of 4 put the recipe's measured tiers at about 0.13 (meh) and 0.70 (love).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import math
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ground.records import AestheticScore, TermScore
from ground.settings import RewardSettings
from rewards.colour_words import reading_id
from rewards.http import BoundClient, MalformedReply, post_json
from rewards.offline_aesthetic import ImageStatsScorer
from rewards.term import Admitted, RewardTerm


class AestheticSettings(BaseModel):
    """How rollouts get their aesthetic score: the term's settings, under `aesthetic` in the run configuration."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["hpsv3", "offline"] = Field(
        default="offline",
        description="'hpsv3': the scorer service over HTTP; 'offline': the image-statistics stand-in.",
    )
    url: str | None = Field(default=None, description="Scorer service base URL (e.g. a Space URL); needed by hpsv3.")
    prompt: str = Field(
        default="a loose watercolour flower",
        description="Text prompt HPSv3 scores against. Generic beats naming the subject: it keeps quality rungs in order.",
    )
    timeout_s: float = Field(default=90.0, gt=0, description="Read timeout of one scoring request, in seconds.")
    attempts: int = Field(default=4, ge=1, description="Attempts per request before the score is unavailable.")
    backoff_s: float = Field(default=2.0, ge=0, description="Base of the jittered exponential backoff, in seconds.")
    max_concurrency: int = Field(default=4, ge=1, description="Scoring requests in flight at once, per client.")
    batch_size: int = Field(default=8, ge=1, description="Images per scoring request.")
    token_env: str = Field(
        default="HF_TOKEN", description="Name of the env var holding a bearer token (read when the client is built)."
    )


class AestheticScorer(Protocol):
    """Scores PNGs in 0..1. Raises ServiceUnavailable when the backend cannot answer."""

    backend_id: str

    async def score(self, pngs: list[bytes], subjects: list[str | None] | None = None) -> list[AestheticScore]:
        """One score per PNG; `subjects`, one per PNG, is what each painting was asked to show (a backend may
        read it: the offline stand-in does, HPSv3 scores against its configured prompt)."""
        ...

    async def aclose(self) -> None: ...


# --- wire format of the scorer service (mirrors scorer_space/README.md) ---


class ScoreRequest(BaseModel):
    images: list[str] = Field(description="Base64-encoded PNGs.")
    prompt: str


class ImageScore(BaseModel):
    mu: float = Field(allow_inf_nan=False)
    sigma: float | None = None
    score: float


class ScoreResponse(BaseModel):
    scores: list[ImageScore]
    model: str
    available: bool = True


def hps_score(mu: float) -> float:
    """HPSv3 mu (unbounded, often negative) to 0..1."""
    return 1.0 / (1.0 + math.exp(-mu / 4.0))


class HPSv3Scorer:
    """Batched, bounded, retried client of the scorer service. Pickles without its live client."""

    def __init__(self, settings: AestheticSettings) -> None:
        if not settings.url:
            raise ValueError("aesthetic.url is required for backend 'hpsv3': set it to the scorer Space's base URL")
        self.settings = settings
        self.url = settings.url.rstrip("/") + "/score"
        # The prompt changes every score, so it is part of the id that cache keys are built from.
        self.backend_id = "hpsv3:" + hashlib.sha256(settings.prompt.encode()).hexdigest()[:8]
        self._http = BoundClient(settings.timeout_s, settings.token_env, settings.max_concurrency)

    async def score(self, pngs: list[bytes], subjects: list[str | None] | None = None) -> list[AestheticScore]:
        size = self.settings.batch_size
        batches = [pngs[i : i + size] for i in range(0, len(pngs), size)]
        results = await asyncio.gather(*(self._score_batch(batch) for batch in batches))
        return [score for batch in results for score in batch]

    async def _score_batch(self, pngs: list[bytes]) -> list[AestheticScore]:
        client, semaphore = self._http.bind()
        request = ScoreRequest(
            images=[base64.b64encode(png).decode("ascii") for png in pngs], prompt=self.settings.prompt
        )

        def parse(body: Any) -> ScoreResponse:
            try:
                reply = ScoreResponse.model_validate(body)
            except ValidationError as error:
                raise MalformedReply(f"malformed: {error.error_count()} field error(s) in the reply") from error
            if not reply.available:
                raise MalformedReply("malformed: the service says available=false")
            if len(reply.scores) != len(pngs):
                raise MalformedReply(f"malformed: {len(reply.scores)} scores for {len(pngs)} images")
            return reply

        async with semaphore:
            reply = await post_json(
                client,
                self.url,
                request.model_dump(),
                parse,
                stage="aesthetic",
                attempts=self.settings.attempts,
                backoff_s=self.settings.backoff_s,
            )
        return [AestheticScore(score=hps_score(s.mu), raw=s.mu, backend=self.backend_id) for s in reply.scores]

    async def aclose(self) -> None:
        await self._http.aclose()


def make_scorer(settings: AestheticSettings) -> AestheticScorer:
    """The scorer the settings name. The offline one is an honest stand-in, named as such in every output."""
    if settings.backend == "hpsv3":
        return HPSv3Scorer(settings)
    return ImageStatsScorer()


async def measure_aesthetic(scorer: AestheticScorer, rollouts: list[Admitted]) -> list[TermScore]:
    """One batched call for the rollouts (the client splits it into requests of `batch_size`)."""
    scores = await scorer.score([rollout.png for rollout in rollouts], [rollout.subject for rollout in rollouts])
    return [TermScore(value=score.score, detail=score.model_dump()) for score in scores]


def build_scorer(settings: AestheticSettings, scoring: Any) -> AestheticScorer:
    return make_scorer(settings)


def aesthetic_settings(config: RewardSettings) -> AestheticSettings:
    """The aesthetic term's settings in a run configuration or the engine's settings."""
    return TERM.settings_of(config)


def check_scorer(settings: AestheticSettings, weight: float) -> None:
    if settings.backend != "offline" and not settings.url:
        raise ValueError(
            f"aesthetic.url is required: the {settings.backend} scorer has weight {weight} and no URL. Pass "
            "space.repo_id=<owner>/<scorer Space> (or aesthetic.url=https://<your-scorer>.hf.space), or choose "
            "aesthetic.backend=offline, or set weights.aesthetic=0."
        )


def aesthetic_context(scorer: Any, rollout: Admitted, batch: Any) -> str:
    """The offline stand-in's score depends on the painting's subject and the colour reading's calibration, so its
    cache key does too (its backend id is unchanged: without a subject it scores as it always did, and keys with one
    cannot meet keys without)."""
    reads = rollout.subject is not None and scorer.backend_id.startswith("offline")
    return f"subject={rollout.subject};{reading_id()}" if reads else ""


TERM = RewardTerm(
    name="aesthetic",
    measures="the aesthetic score A of the painting in 0..1 (HPSv3, or the offline image-statistics stand-in, which "
    "also reads the subject's colours)",
    settings=AestheticSettings,
    build=build_scorer,
    check=check_scorer,
    measure=measure_aesthetic,
    batched=True,
    context=aesthetic_context,
)
