"""The pairwise judge: a painting against k references from the hand-rated pool, each in both presentation orders.

A comparison scores 1 (won both orders), 1/2 (split: a tie or position bias) or 0 (lost both); a comparison where
either order got no verdict is unresolved and left out. The judge score is the mean over resolved comparisons. When
nothing resolved the judge raises ServiceUnavailable, so the composite reward is None rather than a zero.

Backends: any OpenAI-compatible `/chat/completions` endpoint with image input (`OpenAIJudge`, below), or the
offline pool-similarity stand-in (`rewards.offline_judge`).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

from rewards.errors import ServiceUnavailable
from rewards.http import BoundClient, MalformedReply, post_json
from watercolour.records import Comparison, JudgeVerdict


Winner = Literal["A", "B"]
T = TypeVar("T")

DEFAULT_CRITERIA = (
    "Reward what only watercolour does well: pigment that bleeds softly into wet paper, translucent washes layered "
    "so the lower ones glow through, edges that vary from crisp to dissolved, white paper left to breathe, and a "
    "composition that looks chosen. Penalise muddy or opaque colour, flat single-tone fills, mechanical repeated "
    "strokes, uniformly hard outlines and canvases that are nearly empty."
)


class JudgeSettings(BaseModel):
    """How rollouts are compared with the reference pool."""

    backend: Literal["openai", "offline"] = Field(
        default="offline", description="'openai': an OpenAI-compatible VLM endpoint; 'offline': the stats stand-in."
    )
    base_url: str | None = Field(
        default=None, description="OpenAI-compatible base URL, e.g. https://router.huggingface.co/v1 or a vLLM server."
    )
    model: str = Field(default="Qwen/Qwen3-VL-30B-A3B-Instruct", description="Model id sent with every request.")
    references: int = Field(default=4, ge=1, description="References each painting is compared with.")
    mix: dict[str, float] = Field(
        default_factory=lambda: {"love": 0.5, "okay": 0.5},
        description="Share of references per pool tier, renormalised over the tiers the pool has.",
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Read timeout of one judge call, in seconds.")
    attempts: int = Field(default=4, ge=1, description="Attempts per call before that comparison is unresolved.")
    backoff_s: float = Field(default=2.0, ge=0, description="Base of the jittered exponential backoff, in seconds.")
    max_concurrency: int = Field(default=8, ge=1, description="Judge calls in flight at once, per judge.")
    max_tokens: int = Field(default=220, ge=16, description="Reply budget; the winner comes first so it survives.")
    token_env: str = Field(default="HF_TOKEN", description="Name of the env var holding the API key (read at build).")
    criteria: str = Field(default=DEFAULT_CRITERIA, description="What makes a better watercolour, in the prompt.")


class Judge(Protocol):
    """Scores one painting against the references its group seed draws. Raises ServiceUnavailable if none resolved."""

    backend_id: str

    async def judge(self, png: bytes, group_seed: int) -> JudgeVerdict: ...

    async def compare(self, png_a: bytes, png_b: bytes) -> Winner | None:
        """One question: the better of image A and image B (None when the reply named neither)."""
        ...

    async def aclose(self) -> None: ...


class PoolReference(Protocol):
    """What the judge needs of a `watercolour.reference_pool.Reference`."""

    @property
    def name(self) -> str: ...
    @property
    def tier(self) -> str: ...
    @property
    def png(self) -> bytes: ...


R = TypeVar("R", bound=PoolReference)


def draw_references(pool: Sequence[R], k: int, seed: int, mix: dict[str, float]) -> list[R]:
    """k references, seeded by the group so every rollout of a group faces the same ones.

    Counts per tier are floor(k x share) plus largest remainders, capped by the tier's size; the mix is renormalised
    over tiers present. Half `okay` keeps early comparisons winnable; half `love` keeps the ceiling honest.
    """
    tiers: dict[str, list[R]] = {}
    for reference in sorted(pool, key=lambda r: r.name):
        tiers.setdefault(reference.tier, []).append(reference)
    shares = {tier: share for tier, share in mix.items() if share > 0 and tier in tiers}
    if not shares:
        raise ValueError(f"no tier of the judge mix {mix} is in the reference pool (it has {sorted(tiers)})")
    total = sum(shares.values())
    wanted = min(k, sum(len(tiers[tier]) for tier in shares))
    exact = {tier: wanted * share / total for tier, share in shares.items()}
    counts = {tier: min(math.floor(exact[tier]), len(tiers[tier])) for tier in shares}
    by_remainder = sorted(shares, key=lambda tier: exact[tier] - math.floor(exact[tier]), reverse=True)
    while sum(counts.values()) < wanted:
        for tier in by_remainder:
            if sum(counts.values()) < wanted and counts[tier] < len(tiers[tier]):
                counts[tier] += 1
    rng = random.Random(seed)
    return [reference for tier in shares for reference in rng.sample(tiers[tier], counts[tier])]


def judge_digest(settings: JudgeSettings, pool: Sequence[PoolReference]) -> str:
    """Eight hex digits over everything that changes a verdict but the model id: criteria, draw and pool content."""
    digest = hashlib.sha256(json.dumps([settings.criteria, settings.references, settings.mix]).encode())
    for reference in sorted(pool, key=lambda r: r.name):
        digest.update(reference.name.encode() + reference.tier.encode() + hashlib.sha256(reference.png).digest())
    return digest.hexdigest()[:8]


async def pairwise_verdict(
    compare: Callable[[T, T], Awaitable[Winner | None]],
    rollout: T,
    references: list[tuple[str, T]],
    backend: str,
) -> JudgeVerdict:
    """Run the both-orders protocol. `compare(a, b)` names the better of image A and image B, None when unparseable,
    and raises ServiceUnavailable when the service could not answer."""
    failures: list[ServiceUnavailable] = []

    async def verdict(name: str, reference: T) -> Comparison:
        replies = await asyncio.gather(
            compare(rollout, reference), compare(reference, rollout), return_exceptions=True
        )
        winners: list[Winner | None] = []
        for reply in replies:
            if isinstance(reply, ServiceUnavailable):
                failures.append(reply)
                winners.append(None)
            elif isinstance(reply, BaseException):
                raise reply
            else:
                winners.append(reply)
        first, second = winners
        if first is None or second is None:
            return Comparison(reference=name, first=first, second=second)
        wins = (first == "A") + (second == "B")
        return Comparison(reference=name, first=first, second=second, score=wins / 2, position_biased=wins == 1)

    comparisons = await asyncio.gather(*(verdict(name, reference) for name, reference in references))
    resolved = [c for c in comparisons if c.score is not None]
    if not resolved:
        if failures:
            raise ServiceUnavailable("judge", failures[0].cause, max(f.attempts for f in failures))
        raise ServiceUnavailable("judge", "malformed: no reply named a winner", 1)
    return JudgeVerdict(
        score=sum(c.score for c in resolved if c.score is not None) / len(resolved),
        comparisons=list(comparisons),
        position_bias_rate=sum(c.position_biased for c in resolved) / len(resolved),
        backend=backend,
    )


# --- the OpenAI-compatible backend ---

# The winner is declared first so a reply cut off by max_tokens still carries the verdict.
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "winner": {"type": "string", "enum": ["A", "B"]},
        "reason": {"type": "string", "maxLength": 160},
    },
    "required": ["winner", "reason"],
    "additionalProperties": False,
}


def judge_prompt(criteria: str) -> str:
    return (
        "You are shown two watercolour paintings made by generative code: image A first, then image B. "
        f"Which is the better watercolour painting? {criteria} "
        "Judge only how each is painted, not what it depicts. "
        "Give the winner first, then a reason of at most 20 words."
    )


def parse_winner(content: str) -> Winner | None:
    """The winner named by the first JSON object in the reply; None when there is none or it is not A or B."""
    decoder = json.JSONDecoder()
    start = content.find("{")
    while start != -1:
        try:
            found, _ = decoder.raw_decode(content, start)
        except ValueError:
            start = content.find("{", start + 1)
            continue
        if isinstance(found, dict):
            winner = found.get("winner")
            named = winner.strip() if isinstance(winner, str) else None
            return "A" if named == "A" else "B" if named == "B" else None
        start = content.find("{", start + 1)
    return None


def message_content(body: Any) -> str:
    """The reply text of a chat completion; an envelope without one is malformed (and worth a retry)."""
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as error:
        raise MalformedReply("malformed: no choices[0].message.content in the reply") from error
    if not isinstance(content, str):
        raise MalformedReply("malformed: message content is not text")
    return content


def _data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


class OpenAIJudge:
    """A VLM behind an OpenAI-compatible endpoint. The API key is read from `token_env` when the client is built,
    sent as a Bearer header, and never kept in this object's state, its repr or its errors."""

    def __init__(self, settings: JudgeSettings, pool: Sequence[PoolReference]) -> None:
        if not settings.base_url:
            raise ValueError("judge.base_url is required for backend 'openai' (e.g. https://router.huggingface.co/v1)")
        self.settings = settings
        self.pool = list(pool)
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.backend_id = f"openai:{settings.model}:{judge_digest(settings, pool)}"
        self._prompt = judge_prompt(settings.criteria)
        self._reference_urls: dict[str, str] = {}  # encoded once per judge instance, on first draw
        self._http = BoundClient(settings.timeout_s, settings.token_env, settings.max_concurrency)

    def __getstate__(self) -> dict[str, Any]:
        # The encoded references are a cache: a pickle shipped to another process stays small and re-encodes.
        return {**self.__dict__, "_reference_urls": {}}

    def __repr__(self) -> str:
        return f"OpenAIJudge(backend_id={self.backend_id!r}, url={self.url!r})"

    def _reference_url(self, reference: PoolReference) -> str:
        if reference.name not in self._reference_urls:
            self._reference_urls[reference.name] = _data_url(reference.png)
        return self._reference_urls[reference.name]

    async def judge(self, png: bytes, group_seed: int) -> JudgeVerdict:
        drawn = draw_references(self.pool, self.settings.references, group_seed, self.settings.mix)
        references = [(r.name, self._reference_url(r)) for r in drawn]
        return await pairwise_verdict(self._compare, _data_url(png), references, self.backend_id)

    async def compare(self, png_a: bytes, png_b: bytes) -> Winner | None:
        return await self._compare(_data_url(png_a), _data_url(png_b))

    async def _compare(self, image_a: str, image_b: str) -> Winner | None:
        s = self.settings
        body = {
            "model": s.model,
            "temperature": 0,
            "max_tokens": s.max_tokens,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": self._prompt},
                        {"type": "image_url", "image_url": {"url": image_a}},
                        {"type": "image_url", "image_url": {"url": image_b}},
                    ],
                }
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "pairwise_verdict", "strict": True, "schema": VERDICT_SCHEMA},
            },
        }
        client, semaphore = self._http.bind()
        async with semaphore:
            content = await post_json(
                client, self.url, body, message_content, stage="judge", attempts=s.attempts, backoff_s=s.backoff_s
            )
        return parse_winner(content)

    async def aclose(self) -> None:
        await self._http.aclose()


def make_judge(settings: JudgeSettings, pool: Sequence[PoolReference]) -> Judge:
    """The judge the settings name, over a non-empty pool (an empty one would silently zero the judge's weight)."""
    if not pool:
        raise ValueError("the reference pool is empty: the judge has nothing to compare with (check the pool path)")
    draw_references(pool, settings.references, 0, settings.mix)  # fail at build time on a mix the pool cannot meet
    if settings.backend == "openai":
        return OpenAIJudge(settings, pool)
    # Imported here: the offline judge builds on this module's protocol.
    from rewards.offline_judge import PoolSimilarityJudge

    return PoolSimilarityJudge(settings, pool)
