"""The pre-run health checks: which services a preset calls, the judge ping through the reward's HTTP client, and the
renderer the run's scoring will lend."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from deployments.presets import load_config
from rewards.judging.settings import JudgeSettings
from tests.servers.loopback import LoopbackServer, Reply, Request
from watercolour.operations.service_health import ServiceDown, ping_judge, services_to_check


def chat_reply(request: Request) -> Reply:
    return Reply(200, {"model": request.body["model"], "choices": [{"message": {"content": "OK"}}]})


def judge_at(url: str) -> JudgeSettings:
    return JudgeSettings(backend="openai", base_url=url, model="vlm-under-test", token_env="WATERCOLOUR_TEST_JUDGE")


def test_only_remote_services_with_weight_are_checked():
    assert services_to_check(load_config("offline")) == []
    assert services_to_check(load_config("hps-only", {"aesthetic.url": "http://scorer"})) == ["scorer"]
    assert services_to_check(load_config("judge-led", {"aesthetic.url": "http://scorer"})) == ["scorer", "judge"]


async def test_the_ping_sends_the_key_from_its_variable_and_returns_the_model(monkeypatch):
    monkeypatch.setenv("WATERCOLOUR_TEST_JUDGE", "sk-test")
    with LoopbackServer(chat_reply) as server:
        assert await ping_judge(judge_at(server.url)) == "vlm-under-test"
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    assert server.requests[0].body["max_tokens"] == 1


async def test_a_refused_key_and_a_dead_port_name_their_fix():
    with LoopbackServer(lambda request: Reply(401, {"error": "bad key"})) as server:
        with pytest.raises(ServiceDown, match=r"refused the key .*WATERCOLOUR_TEST_JUDGE"):
            await ping_judge(judge_at(server.url))
    with pytest.raises(ServiceDown, match="unreachable .*check judge.base_url"):
        await ping_judge(judge_at("http://127.0.0.1:9"))


def in_a_fresh_process(code: str, **env: str) -> str:
    """`code`'s stdout, run in a process of its own: the browser pool is the process's, and the Chromium path is
    read at import."""
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def check_renderer_in_a_fresh_process(prelude: str = "", **env: str) -> str:
    """What `check_renderer` returned in a fresh process, or `ServiceDown: <message>`."""
    return in_a_fresh_process(
        f"""{prelude}
from ground.settings import RenderSettings
from rewards.scoring.engine_thread import engine_thread
from watercolour.operations.service_health import ServiceDown, check_renderer
try:
    print(check_renderer(RenderSettings(browsers=1, pages_per_browser=1)))
    print("pool warmed:", engine_thread().browsers is not None)
    engine_thread().close()
except ServiceDown as error:
    print("ServiceDown:", error)
""",
        **env,
    )


def test_a_renderer_that_cannot_start_is_named_with_its_fix_before_the_run():
    missing = check_renderer_in_a_fresh_process(WATERCOLOUR_CHROMIUM="/nonexistent/chromium")
    assert missing.startswith("ServiceDown: the renderer cannot start: Chromium not found at /nonexistent/chromium")
    assert "make setup" in missing
    # Playwright missing from the worker's Python (a worker started without the renderer's environment).
    no_playwright = check_renderer_in_a_fresh_process("import sys; sys.modules['playwright'] = None")
    assert no_playwright.startswith("ServiceDown: the renderer cannot start: Playwright is not installed")
    assert "make setup" in no_playwright


@pytest.mark.browser
def test_the_renderer_check_paints_a_blank_sheet_on_the_pool_the_run_will_use():
    ready = check_renderer_in_a_fresh_process()
    assert ready.startswith("renderer ready (1 x 1 pages; a blank sheet in "), ready
    assert "pool warmed: True" in ready


@pytest.mark.browser
def test_a_repaint_run_checks_the_renderer_and_leaves_no_idle_pool_behind():
    """Repaint episodes render on a pool of their own: the pool the check started is closed again."""
    checked = in_a_fresh_process("""
from deployments.presets import load_config
from rewards.scoring.engine_thread import engine_thread_running
from tasks.health import check_local_renderer
for preset in ("repaint", "smoke"):
    config = load_config(preset, {"render.browsers": 1, "render.pages_per_browser": 1})
    print(preset, check_local_renderer.fn(config).split(" (")[0], "engine thread left:", engine_thread_running())
""")
    assert checked.splitlines() == [
        "repaint renderer ready engine thread left: False",
        "smoke renderer ready engine thread left: True",
    ], checked
