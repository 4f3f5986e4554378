"""Shared fixtures: one warm browser pool per test session, on the session's event loop."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest
import pytest_asyncio

from tests.servers.hub import HUB_TOKEN


# Two torch threads on a 2-core box ran 8x slower than one; Chromium competes for the same cores.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# Warm starts a preset makes go to a cache of the session's own, never the user's (~/.cache/watercolour).
if "WATERCOLOUR_CACHE" not in os.environ:
    os.environ["WATERCOLOUR_CACHE"] = tempfile.mkdtemp(prefix="watercolour-cache-")
    atexit.register(shutil.rmtree, os.environ["WATERCOLOUR_CACHE"], ignore_errors=True)


@pytest.fixture
def hub(monkeypatch):
    """A loopback Hugging Face Hub (Space runtime, restart, pause, sleep time, uploads) on 127.0.0.1."""
    import huggingface_hub.constants

    from watercolour.rehearsal.hub import HubLoopback

    # The session runs with the Hub offline for model loading; Space control is the one place that must reach a
    # "Hub", and it reaches this one.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("WATERCOLOUR_TEST_HUB_TOKEN", HUB_TOKEN)
    with HubLoopback(token=HUB_TOKEN) as server:
        yield server


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """One Prefect test server for the session (flows, the fan-out): starting one costs ~10 s."""
    from prefect.testing.utilities import prefect_test_harness

    os.environ.setdefault("PREFECT_HOME", str(tmp_path_factory.mktemp("prefect-home")))
    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest_asyncio.fixture(scope="session")
async def browser_pool():
    """A started BrowserPool shared by every browser test (launching Chromium costs ~0.5 s a browser)."""
    from renderers import BrowserPool

    pool = BrowserPool(browsers=2, pages_per_browser=2, deadline_s=15.0)
    await pool.start()
    yield pool
    await pool.close()


@pytest.fixture
def flower_sketch() -> str:
    """A small valid sketch inside the allowlist: five petals and a centre."""
    return """
async function setup() {
  createCanvas(600, 600, WEBGL);
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  noLoop();
}
function draw() {
  translate(-width / 2, -height / 2);
  background("#f6f0e4");
  brush.noStroke();
  for (let i = 0; i < 5; i++) {
    const a = i * 72;
    brush.fill("#f28c6a", 200);
    brush.fillBleed(0.25);
    brush.fillTexture(0.4, 0.4);
    brush.beginShape(0.6);
    brush.vertex(300, 300);
    brush.vertex(300 + 220 * cos(a - 25), 300 + 220 * sin(a - 25));
    brush.vertex(300 + 240 * cos(a), 300 + 240 * sin(a));
    brush.vertex(300 + 220 * cos(a + 25), 300 + 220 * sin(a + 25));
    brush.endShape(true);
  }
  brush.fill("#b0305a", 220);
  brush.circle(300, 300, 30, 0.3);
}
"""
