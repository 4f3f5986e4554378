"""A tiny OpenAI-compatible `/chat/completions` server for judge tests.

It checks the request shape the judge promises (temperature 0, one text part and two PNG data-URL image parts, a
strict json_schema with `winner` first) and answers 400 naming the problem otherwise. Winners come from a rule the
test controls, applied to the two decoded PNGs.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from tests.servers.loopback import Handler, LoopbackServer, Reply, Request, failing_first


Rule = Callable[[bytes, bytes], str]  # (image A, image B) -> the reply's message content

PREFIX = "data:image/png;base64,"


def verdict(winner: str, reason: str = "softer edges") -> str:
    return json.dumps({"winner": winner, "reason": reason})


def shape_problems(body: dict) -> list[str]:
    problems = []
    if body.get("temperature") != 0:
        problems.append("temperature must be 0")
    parts = body["messages"][0]["content"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    if len(images) != 2 or not all(url.startswith(PREFIX) for url in images):
        problems.append("need exactly two PNG data-URL images")
    if [p["type"] for p in parts].count("text") != 1:
        problems.append("need one text part")
    schema = body.get("response_format", {}).get("json_schema", {})
    if not schema.get("strict") or list(schema.get("schema", {}).get("properties", {}))[:1] != ["winner"]:
        problems.append("need a strict json_schema with winner first")
    return problems


def chat_handler(rule: Rule) -> Handler:
    def handle(request: Request) -> Reply:
        if not request.path.endswith("/chat/completions"):
            return Reply(404, {"error": "not found"})
        content = request.body["messages"][0]["content"]
        if isinstance(content, str):  # a text-only call: the health check's one-token ping
            message = {"role": "assistant", "content": "OK"}
            return Reply(
                200,
                {
                    "id": "ping",
                    "object": "chat.completion",
                    "model": request.body.get("model"),
                    "choices": [{"index": 0, "message": message}],
                },
            )
        problems = shape_problems(request.body)
        if problems:
            return Reply(400, {"error": problems})
        parts = request.body["messages"][0]["content"]
        a, b = (base64.b64decode(p["image_url"]["url"][len(PREFIX) :]) for p in parts if p["type"] == "image_url")
        message = {"role": "assistant", "content": rule(a, b)}
        return Reply(
            200, {"id": "cmpl-test", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}
        )

    return handle


def openai_compat_server(rule: Rule, fail_first: int = 0, failure: Reply | None = None) -> LoopbackServer:
    """Serve `rule`; the first `fail_first` requests get `failure` (a 503 by default)."""
    handle = chat_handler(rule)
    if fail_first:
        handle = failing_first(fail_first, failure or Reply(503, {"error": "overloaded"}), handle)
    return LoopbackServer(handle)
