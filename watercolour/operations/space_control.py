"""Scorer Space lifecycle through huggingface_hub: wake it, wait for its model, put it to sleep.

Plain functions, testable against a loopback Hub, called by `watercolour space` and (as tasks that only add
retries) by the flows in `tasks/space.py`.
Every call builds its own `HfApi(endpoint=..., token=...)` from `SpaceSettings`, so nothing reads the
environment at import and a test can point the real client at 127.0.0.1.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Literal

import httpx

from ground.run_config import SpaceSettings


# Stages from which only an owner's restart brings a Space back ("SLEEPING" is not in hub 2.4's SpaceStage
# enum, but the Hub reports it and SpaceRuntime keeps the raw string).
ASLEEP = frozenset({"PAUSED", "SLEEPING", "STOPPED"})


class SpaceUnavailable(RuntimeError):
    """The Space did not come up, or its model did not load, within its budget."""


class SpaceApi:
    """The Space calls of `huggingface_hub.HfApi` a run makes, which reach the Hub even with `HF_HUB_OFFLINE` set.

    That switch keeps model files from being fetched (the Makefile sets it for everything it runs, the worker of
    `make prefect-up` included), while a run that names a Space has asked for that Space to be woken and slept: each
    call lifts it for its own duration, under a lock, and puts it back.
    """

    _lock = threading.Lock()

    def __init__(self, api: Any) -> None:
        self.api = api

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.api, name)

        def reaching_the_hub(*args: Any, **kwargs: Any) -> Any:
            from huggingface_hub import constants

            with self._lock:
                offline, constants.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE, False
                try:
                    return method(*args, **kwargs)
                finally:
                    constants.HF_HUB_OFFLINE = offline

        return reaching_the_hub


def hub_api(settings: SpaceSettings) -> SpaceApi:
    from huggingface_hub import HfApi

    token = os.environ.get(settings.token_env)
    if not token:
        raise SpaceUnavailable(
            f"${settings.token_env} is not set: Space control needs the Space owner's token in that variable"
        )
    return SpaceApi(HfApi(endpoint=settings.endpoint, token=token))


def wake_space(settings: SpaceSettings) -> str:
    """Restart the Space if it is asleep, then wait until it is RUNNING; returns the stage it was found in."""
    api = hub_api(settings)
    found = str(api.get_space_runtime(settings.repo_id).stage)
    if found in ASLEEP:
        api.restart_space(settings.repo_id)
    runtime = api.wait_for_space(settings.repo_id, timeout=settings.wake_timeout_s, poll_interval=settings.poll_s)
    if runtime.stage != "RUNNING":
        raise SpaceUnavailable(
            f"Space {settings.repo_id} is {runtime.stage}, not RUNNING: read its logs on the Hub and fix the build"
        )
    return found


def wait_until_loaded(health_url: str, timeout_s: float, poll_s: float) -> float:
    """Poll the app's own /health until `loaded` is true; returns the seconds it took.

    RUNNING only means the container started: the scorer loads its weights lazily and says so on /health.
    """
    started = time.monotonic()
    last = "no answer yet"
    with httpx.Client(timeout=httpx.Timeout(10.0)) as client:
        while True:
            try:
                reply = client.get(health_url)
                if reply.status_code == 200:
                    body = reply.json()
                    if body.get("error"):
                        raise SpaceUnavailable(f"the scorer at {health_url} failed to load: {body['error']}")
                    if body.get("loaded"):
                        return time.monotonic() - started
                    last = "loaded=false"
                else:
                    last = f"HTTP {reply.status_code}"
            except httpx.TransportError as error:
                last = type(error).__name__
            if time.monotonic() - started > timeout_s:
                raise SpaceUnavailable(f"the scorer at {health_url} was not loaded after {timeout_s:.0f} s ({last})")
            time.sleep(poll_s)


def sleep_space(settings: SpaceSettings, mode: Literal["pause", "sleep"] | None = None) -> str:
    """Pause the Space (or shorten its idle timeout so it sleeps); a no-op when that is already so."""
    api = hub_api(settings)
    mode = mode or settings.at_end
    runtime = api.get_space_runtime(settings.repo_id)
    if mode == "pause":
        if runtime.stage == "PAUSED":
            return "already paused"
        api.pause_space(settings.repo_id)
        return "paused"
    if runtime.stage in ASLEEP or runtime.sleep_time == settings.idle_s:
        return f"already {'asleep' if runtime.stage in ASLEEP else 'set to sleep'}"
    api.set_space_sleep_time(settings.repo_id, settings.idle_s)
    return f"sleeps after {settings.idle_s} s idle"


def set_sleep_backstop(settings: SpaceSettings) -> int | None:
    """Set the Space's own idle timeout, so the Hub sleeps it even if this process is killed."""
    return hub_api(settings).set_space_sleep_time(settings.repo_id, settings.idle_s).sleep_time


def is_transient(error: BaseException) -> bool:
    """Network trouble and 5xx/429 are worth a retry; a bad token, a missing Space or a timeout are not."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(error, httpx2.TransportError | httpx.TransportError):
        return True
    if isinstance(error, HfHubHTTPError) and error.response is not None:
        return error.response.status_code == 429 or error.response.status_code >= 500
    return False
