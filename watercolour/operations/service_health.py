"""Health checks of the remote services a run will call, and of its renderer, before it spends a GPU-hour finding out.

Only services the run will actually call are checked: an offline backend has nothing to reach, and a term at
weight 0 is never measured. The judge check is one tiny chat call through the reward's own HTTP client (the same
bearer token, timeouts and connection limits a run's judge uses); the scorer check wakes its Space (when the
run names one) and waits for the app's own /health to say the model is loaded. `tasks/health.py` runs these as
Prefect tasks; anything else may call them directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from rewards.aesthetic import aesthetic_settings
from rewards.http import build_client
from rewards.judging.judge import judge_settings
from rewards.judging.settings import JudgeSettings


if TYPE_CHECKING:
    from ground.run_config import OpenEnvSettings, RunConfig, SpaceSettings
    from ground.settings import RenderSettings


# One tiny call: enough to prove the URL, the key and the model id, cheap enough to run before every run.
JUDGE_PING_TIMEOUT_S = 30.0


class ServiceDown(RuntimeError):
    """A service the run needs does not answer correctly; the message names the fix."""


def services_to_check(config: RunConfig) -> list[str]:
    """The remote services this configuration will call: 'scorer', 'judge', 'environment' (the OpenEnv painting
    server, which then does the scoring: the scorer and judge it calls are its own to check)."""
    if config.openenv is not None:
        return ["environment"]
    services = []
    if config.weights.aesthetic > 0 and aesthetic_settings(config).backend != "offline":
        services.append("scorer")
    if config.weights.judge > 0 and judge_settings(config).backend != "offline":
        services.append("judge")
    return services


async def ping_judge(settings: JudgeSettings, timeout_s: float = JUDGE_PING_TIMEOUT_S) -> str:
    """One OpenAI-compatible chat call with a one-token reply; returns the model id the server answered with."""
    if not settings.base_url:
        raise ServiceDown("judge.base_url is not set: the judge has nowhere to be reached")
    body = {"model": settings.model, "messages": [{"role": "user", "content": "Reply with OK."}], "max_tokens": 1}
    url = settings.base_url.rstrip("/") + "/chat/completions"
    async with build_client(timeout_s, settings.token_env, max_connections=1) as client:
        try:
            reply = await client.post(url, json=body)
        except httpx.TransportError as error:
            raise ServiceDown(
                f"the judge at {url} is unreachable ({type(error).__name__}): check judge.base_url"
            ) from None
    if reply.status_code in (401, 403):
        raise ServiceDown(
            f"the judge at {url} refused the key (HTTP {reply.status_code}): check ${settings.token_env}"
        )
    if reply.status_code != 200:
        raise ServiceDown(f"the judge at {url} answered HTTP {reply.status_code}: {reply.text[:200]}")
    try:
        reply.json()["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ServiceDown(f"the judge at {url} did not answer like an OpenAI chat endpoint") from None
    return str(reply.json().get("model", settings.model))


def wait_for_scorer(config: RunConfig, space: SpaceSettings | None) -> str:
    """Wake the scorer's Space when the run names one, then wait for the model behind the URL to load."""
    from watercolour.operations.space_control import wait_until_loaded, wake_space

    url = aesthetic_settings(config).url
    if not url:
        raise ServiceDown("aesthetic.url is not set: the scorer has nowhere to be reached")
    found = wake_space(space) if space is not None else "not managed"
    poll_s = space.poll_s if space is not None else 5.0
    timeout_s = space.load_timeout_s if space is not None else 600.0
    waited = wait_until_loaded(url.rstrip("/") + "/health", timeout_s, poll_s)
    return f"scorer loaded (Space {found}, waited {waited:.0f} s)"


# The smallest sketch the harness admits: a blank sheet.
BLANK_SHEET = "function setup() { createCanvas(600, 600, WEBGL); background(250); }"


def check_renderer(render: RenderSettings) -> str:
    """This process's browser pool (the one its scoring lends, `rewards.scoring.engine_thread`) starts with the run's
    render settings and renders a blank sheet: a renderer that cannot start would otherwise dead-letter every rollout
    of every step. Warms the pool the run renders on, so it costs the run nothing but the sheet."""
    from renderers import RendererUnavailable
    from rewards.scoring.engine_thread import engine_thread

    async def blank_sheet() -> tuple[Any, Any]:
        browsers = await engine_thread().browser_pool(render)
        return browsers, await browsers.render(BLANK_SHEET, seed=0)

    try:
        browsers, result = engine_thread().run(blank_sheet())
    except RendererUnavailable as error:
        raise ServiceDown(f"the renderer cannot start: {error}") from None
    if not result.ok:
        reasons = [str(reason) for reason in (*result.errors[:3], result.fault_detail) if reason]
        flags = [name for name in ("timed_out", "crashed") if getattr(result, name)]
        raise ServiceDown(
            f"the renderer started but could not paint a blank sheet ({', '.join(flags) or 'no picture'}): "
            f"{'; '.join(reasons) or 'no reason given'}"
        )
    # The pool's own size: an earlier caller in this process may have started it with other settings.
    size = f"{browsers.browsers} x {browsers.pages_per_browser} pages"
    return f"renderer ready ({size}; a blank sheet in {result.render_ms:.0f} ms)"


def probe_environment(settings: OpenEnvSettings, timeout_s: float = JUDGE_PING_TIMEOUT_S) -> str:
    """The OpenEnv painting server answers /health, serves the painting action (a `sketch`) and has a free session."""
    base = settings.url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/")
    try:
        with httpx.Client(timeout=timeout_s) as client:
            health = client.get(f"{base}/health")
            schema = client.get(f"{base}/schema")
            sessions = client.get(f"{base}/sessions")
    except httpx.TransportError as error:
        raise ServiceDown(
            f"the OpenEnv server at {base} is unreachable ({type(error).__name__}): start it "
            "(python -m openenv_painting.server.app) or check openenv.url"
        ) from None
    if health.status_code != 200 or health.json().get("status") != "healthy":
        raise ServiceDown(
            f"the OpenEnv server at {base} is not healthy: HTTP {health.status_code} {health.text[:200]}"
        )
    properties = schema.json().get("action", {}).get("properties", {}) if schema.status_code == 200 else {}
    if "sketch" not in properties:
        raise ServiceDown(f"{base} is an OpenEnv server, but not of the painting environment (no 'sketch' action)")
    if sessions.status_code != 200:
        raise ServiceDown(f"{base}/sessions answered HTTP {sessions.status_code}: is it the painting server?")
    open_now, cap = sessions.json()["active"], sessions.json()["max"]
    if open_now >= cap:
        raise ServiceDown(f"the OpenEnv server at {base} is at capacity ({open_now}/{cap} sessions)")
    return f"painting environment up ({open_now}/{cap} sessions open)"
