"""The judge's OpenAI-compatible backend: a VLM behind any `/chat/completions` endpoint with image input.

Each comparison is one chat call showing image A then image B, asking for a JSON verdict whose winner comes first (so a
reply cut off by `max_tokens` still carries it) and a one-line reason after it. The protocol around it is
`rewards.judging.judge_protocol`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from rewards.http import BoundClient, MalformedReply, post_json
from rewards.judging.judge_protocol import PairwiseJudge, PoolReference, Winner, judge_digest
from rewards.judging.settings import JudgeSettings


# The winner is declared first so a reply cut off by max_tokens still carries the verdict. The reason is what the
# repaint policy reads after its painting (`episodes.observation`).
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "winner": {"type": "string", "enum": ["A", "B"]},
        "reason": {"type": "string", "maxLength": 160},
    },
    "required": ["winner", "reason"],
    "additionalProperties": False,
}
# A reason longer than the schema allows (a server that ignores it) is cut to this.
REASON_CHARS = 160


def judge_prompt(criteria: str) -> str:
    return (
        "You are shown two watercolour paintings made by generative code: image A first, then image B. "
        f"Which is the better watercolour painting? {criteria} "
        "Judge only how each is painted, not what it depicts. "
        "Give the winner first, then a reason of at most 20 words."
    )


def parse_verdict(content: str) -> tuple[Winner | None, str | None]:
    """The winner and reason named by the first JSON object in the reply. The winner is None when there is no
    object or it names neither A nor B; the reason is None when missing or not text (the winner stands without it)."""
    decoder = json.JSONDecoder()
    start = content.find("{")
    while start != -1:
        try:
            found, _ = decoder.raw_decode(content, start)
        except ValueError:
            start = content.find("{", start + 1)
            continue
        if isinstance(found, dict):
            winner, reason = found.get("winner"), found.get("reason")
            named = winner.strip() if isinstance(winner, str) else None
            said = " ".join(reason.split())[:REASON_CHARS] if isinstance(reason, str) and reason.strip() else None
            return ("A" if named == "A" else "B" if named == "B" else None), said
        start = content.find("{", start + 1)
    return None, None


def parse_winner(content: str) -> Winner | None:
    """The winner named by the first JSON object in the reply; None when there is none or it is not A or B."""
    return parse_verdict(content)[0]


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


class OpenAIJudge(PairwiseJudge[str]):
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

    def prepare_reference(self, reference: PoolReference) -> str:
        if reference.name not in self._reference_urls:
            self._reference_urls[reference.name] = _data_url(reference.png)
        return self._reference_urls[reference.name]

    def prepare_rollout(self, png: bytes) -> str:
        return _data_url(png)

    async def explain(self, image_a: str, image_b: str) -> tuple[Winner | None, str | None]:
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
        return parse_verdict(content)

    async def aclose(self) -> None:
        await self._http.aclose()
