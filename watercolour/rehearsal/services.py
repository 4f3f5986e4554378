"""Stand-ins for the recipe's remote services on 127.0.0.1, so a rehearsal (and the GPU benchmark) scores over real
HTTP with no weights and no network.

- The aesthetic scorer is the project's own scorer Space app (`scorer_space/app.py`) under uvicorn in a process of
  its own, with its stand-in model (image statistics on HPSv3's scale): the client, the wire format, the batching
  and the service's file handling are the real ones; only HPSv3's forward pass is missing.
- The judge is an OpenAI-compatible `/chat/completions` endpoint that prefers the painting with more paint on the
  sheet, answering in the strict JSON verdict the judge asks for.
- The Hub's Space endpoints are `watercolour.rehearsal.hub.HubLoopback`, with the rehearsal's Space on it.

The scorer and the judge answer in milliseconds, where the real ones take seconds (HPSv3 is a 7B VLM, the recipe's
judge a 30B-A3B VLM behind a router): a rehearsal measures what the trainer spends around them, and docs/gpu.md says
how their own latency enters a step.
"""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


SPACE = Path(__file__).resolve().parents[2] / "scorer_space"
DATA_URL = "data:image/png;base64,"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def scorer_service() -> Iterator[str]:
    """The scorer Space app with its stand-in model on 127.0.0.1; yields its base URL once /health says loaded."""
    import httpx

    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "app:app", "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "WATERCOLOUR_SCORER_MODEL": "standin"}
    process = subprocess.Popen([*command, "--log-level", "warning"], cwd=SPACE, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health", timeout=1).json()["loaded"]:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the scorer app did not start: run `python -m uvicorn app:app` in scorer_space/")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def paint_share(png: bytes) -> float:
    """The share of the picture darker than its paper (its lightest tone) by more than a faint wash."""
    import numpy as np
    from PIL import Image

    grey = np.asarray(Image.open(io.BytesIO(png)).convert("L").resize((64, 64)), dtype=np.int16)
    return float((grey < grey.max() - 16).mean())


class JudgeHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        parts = body["messages"][0]["content"]
        if isinstance(parts, str):  # the health check's text-only ping
            content = "OK"
        else:
            a, b = (
                base64.b64decode(part["image_url"]["url"][len(DATA_URL) :])
                for part in parts
                if part["type"] == "image_url"
            )
            winner = "A" if paint_share(a) >= paint_share(b) else "B"
            content = json.dumps({"winner": winner, "reason": "more paint on the sheet"})
        reply = {
            "id": "loopback",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # one line per call would drown the step's rows
        return None


class StandInServer(ThreadingHTTPServer):
    """A threaded HTTP server whose listen queue holds every call a client makes at once.

    http.server queues 5 connections by default. The judge asks its comparisons 8 at a time
    (`judge.max_concurrency`), and Linux drops a connection the queue cannot hold, so the client connected again
    after TCP's 1 s retransmit: a painting's comparisons took 1.05 s instead of 0.10 s, a second that no real
    endpoint adds and that a step's reward wait could carry."""

    request_queue_size = 128
    daemon_threads = True


@contextmanager
def judge_service() -> Iterator[str]:
    """The loopback judge on 127.0.0.1, in a thread; yields its OpenAI-style base URL (…/v1)."""
    server = StandInServer(("127.0.0.1", free_port()), JudgeHandler)
    thread = threading.Thread(target=server.serve_forever, name="loopback-judge", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


# The rehearsal's Space on the stand-in Hub, and the token its owner holds (not a secret: the Hub is a stand-in).
SPACE_REPO = "rehearsal/hpsv3-scorer"
TOKEN_ENV = "WATERCOLOUR_REHEARSAL_TOKEN"
TOKEN = "rehearsal"


@dataclass
class StandIns:
    """The stand-ins a rehearsal started: the configuration overrides that point a run at them, and the Hub."""

    overrides: dict[str, Any] = field(default_factory=dict)
    hub: Any = None

    def describe(self) -> list[str]:
        """One line per stand-in, for the rehearsal's report."""
        lines = []
        if "aesthetic.url" in self.overrides:
            lines.append(
                f"aesthetic: the scorer Space's app with its stand-in model at {self.overrides['aesthetic.url']}"
            )
            lines.append(f"Space: {SPACE_REPO} on a stand-in Hub at {self.overrides['space.endpoint']}")
        if "judge.base_url" in self.overrides:
            lines.append(f"judge: an OpenAI-compatible stand-in at {self.overrides['judge.base_url']}")
        return lines or ["no remote services: this configuration scores offline"]


@contextmanager
def stand_ins(config: Any) -> Iterator[StandIns]:
    """Stand-ins for every remote service `config` (a RunConfig) would call, started for the block: the scorer and
    its Space (asleep, as a Space is between runs) on a stand-in Hub, and the judge. Sets the Space owner's token
    variable in this process (`TOKEN_ENV`); a Prefect worker needs it exported too."""
    from rewards.aesthetic import aesthetic_settings
    from rewards.judging.judge import judge_settings

    started = StandIns()
    with ExitStack() as stack:
        if config.weights.aesthetic > 0 and aesthetic_settings(config).backend != "offline":
            from watercolour.rehearsal.hub import HubLoopback

            hub = stack.enter_context(HubLoopback(token=TOKEN, user="rehearsal"))
            hub.add_space(SPACE_REPO, stage="PAUSED", load_polls=0)
            os.environ[TOKEN_ENV] = TOKEN
            started.hub = hub
            started.overrides |= {
                "aesthetic.url": stack.enter_context(scorer_service()),
                "space.repo_id": SPACE_REPO,
                "space.endpoint": hub.endpoint,
                "space.token_env": TOKEN_ENV,
                "space.poll_s": 0.2,
            }
        if config.weights.judge > 0 and judge_settings(config).backend != "offline":
            started.overrides |= {"judge.base_url": stack.enter_context(judge_service()), "judge.model": "stand-in"}
        yield started
