"""Loopback stand-ins for the pool generator's models: a sketch writer and a vision critic, both OpenAI-compatible.

The writer answers a first draft with the next seed-pool sketch in a ```javascript fence, and a revision request
(its earlier reply, then a render and a critique) with a different seed sketch, so a test can tell round 1 from
round 0. Every `prose_every`-th first draft is prose with no sketch, which the gate must refuse. The critic checks
that it was sent a sketch and a PNG render and answers a short critique.
"""

from __future__ import annotations

import itertools
import threading

from ground.reference_pool import BUNDLED_POOL
from tests.servers.loopback import LoopbackServer, Reply, Request


CRITIQUE = "The petals are too uniform; let the second wash bleed further and leave more white paper."
SKETCHES = [path.read_text() for path in sorted(BUNDLED_POOL.glob("*.js"))]


def completion(content: str) -> Reply:
    message = {"role": "assistant", "content": content}
    return Reply(200, {"id": "cmpl-test", "object": "chat.completion", "choices": [{"index": 0, "message": message}]})


def parts(message: dict) -> list[dict]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def writer_server(prose_every: int = 0) -> LoopbackServer:
    drafts, first_drafts = itertools.count(), itertools.count()
    lock = threading.Lock()

    def handle(request: Request) -> Reply:
        messages = request.body["messages"]
        if messages[0]["role"] != "system" or messages[1]["role"] != "user":
            return Reply(400, {"error": "need the system prompt, then the user prompt"})
        if messages[-1]["role"] == "assistant" or len(messages) not in (2, 4):
            return Reply(400, {"error": "a request ends with the user's turn"})
        revising = len(messages) == 4
        if revising and not any(p["type"] == "image_url" for p in parts(messages[-1])):
            return Reply(400, {"error": "a revision request shows the render"})
        with lock:
            number = next(drafts)
            first = -1 if revising else next(first_drafts)
        if prose_every and not revising and first % prose_every == prose_every - 1:
            return completion("I would paint a lovely hibiscus, but I cannot write code today.")
        sketch = SKETCHES[(number + (len(SKETCHES) // 2 if revising else 0)) % len(SKETCHES)]
        return completion(f"Here is the painting.\n\n```javascript\n{sketch}\n```")

    return LoopbackServer(handle)


def critic_server() -> LoopbackServer:
    def handle(request: Request) -> Reply:
        content = parts(request.body["messages"][0])
        images = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
        texts = [p["text"] for p in content if p["type"] == "text"]
        if len(images) != 1 or not images[0].startswith("data:image/png;base64,"):
            return Reply(400, {"error": "the critic needs one PNG render"})
        if not texts or "brush." not in texts[0]:
            return Reply(400, {"error": "the critic needs the sketch"})
        return completion(CRITIQUE)

    return LoopbackServer(handle)
