"""The scorer Space's own app (`scorer_space/`) in a process of its own under uvicorn on 127.0.0.1, as the Space runs
it; `kill()` takes it down mid-test like a Space that dies."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.servers.loopback import free_port


SPACE = Path(__file__).resolve().parents[2] / "scorer_space"


@dataclass
class RunningSpace:
    url: str
    process: subprocess.Popen

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@contextmanager
def serve_scorer_space(model: str = "standin") -> Iterator[RunningSpace]:
    """Start the app with `WATERCOLOUR_SCORER_MODEL=model` and yield it once /health says it loaded or failed to."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "app:app", "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "WATERCOLOUR_SCORER_MODEL": model}
    process = subprocess.Popen(command + ["--log-level", "warning"], cwd=SPACE, env=env, stderr=subprocess.DEVNULL)
    space = RunningSpace(f"http://127.0.0.1:{port}", process)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(space.url + "/health", timeout=1).json()
                if health["loaded"] or health["error"]:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "the scorer app did not start"
            time.sleep(0.1)
        yield space
    finally:
        process.terminate()
        process.wait(timeout=10)
