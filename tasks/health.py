"""Health checks of the remote services a run will call, before it spends a GPU-hour finding out.

Only services the run will actually call are checked: an offline backend has nothing to reach, and a term at
weight 0 is never measured. The judge check is one tiny chat call; the scorer check wakes its Space (when the
run names one) and waits for the app's own /health to say the model is loaded.
"""

from __future__ import annotations

import os

import httpx
from prefect import task

from tasks.space import SpaceSettings, wait_until_loaded, wake_space
from watercolour.config import RunConfig


# One tiny call: enough to prove the URL, the key and the model id, cheap enough to run before every run.
JUDGE_PING_TIMEOUT_S = 30.0


class ServiceDown(RuntimeError):
    """A service the run needs does not answer correctly; the message names the fix."""


def services_to_check(config: RunConfig) -> list[str]:
    """The remote services this configuration will call: 'scorer', 'judge', both or neither."""
    services = []
    if config.weights.aesthetic > 0 and config.aesthetic.backend != "offline":
        services.append("scorer")
    if config.weights.judge > 0 and config.judge.backend != "offline":
        services.append("judge")
    return services


def ping_judge(base_url: str, model: str, token_env: str, timeout_s: float = JUDGE_PING_TIMEOUT_S) -> str:
    """One OpenAI-compatible chat call with a one-token reply; returns the model id the server answered with."""
    headers = {}
    if token := os.environ.get(token_env):
        headers["Authorization"] = f"Bearer {token}"
    body = {"model": model, "messages": [{"role": "user", "content": "Reply with OK."}], "max_tokens": 1}
    url = base_url.rstrip("/") + "/chat/completions"
    try:
        reply = httpx.post(url, json=body, headers=headers, timeout=timeout_s)
    except httpx.TransportError as error:
        raise ServiceDown(
            f"the judge at {url} is unreachable ({type(error).__name__}): check judge.base_url"
        ) from None
    if reply.status_code in (401, 403):
        raise ServiceDown(f"the judge at {url} refused the key (HTTP {reply.status_code}): check ${token_env}")
    if reply.status_code != 200:
        raise ServiceDown(f"the judge at {url} answered HTTP {reply.status_code}: {reply.text[:200]}")
    try:
        reply.json()["choices"][0]
    except (ValueError, KeyError, IndexError):
        raise ServiceDown(f"the judge at {url} did not answer like an OpenAI chat endpoint") from None
    return str(reply.json().get("model", model))


@task(retries=2, retry_delay_seconds=[5, 20])
def check_judge(config: RunConfig) -> str:
    judge = config.judge
    assert judge.base_url, "RunConfig validation guarantees a base URL for a judge that will be called"
    return ping_judge(judge.base_url, judge.model, judge.token_env)


@task(retries=1, retry_delay_seconds=[10])
def check_scorer(config: RunConfig, space: SpaceSettings | None) -> str:
    """Wake the scorer's Space when the run names one, then wait for the model behind the URL to load."""
    assert config.aesthetic.url, "RunConfig validation guarantees a URL for a scorer that will be called"
    found = wake_space(space) if space is not None else "not managed"
    poll_s = space.poll_s if space is not None else 5.0
    timeout_s = space.load_timeout_s if space is not None else 600.0
    waited = wait_until_loaded(config.aesthetic.url.rstrip("/") + "/health", timeout_s, poll_s)
    return f"scorer loaded (Space {found}, waited {waited:.0f} s)"


def check_services(config: RunConfig, space: SpaceSettings | None) -> dict[str, str]:
    """Run the checks this configuration needs (inside a flow: each is a task); report every service."""
    report = {name: "offline or weight 0: not called" for name in ("scorer", "judge")}
    for service in services_to_check(config):
        report[service] = check_scorer(config, space) if service == "scorer" else check_judge(config)
    return report
