"""The OpenEnv app of the painting environment: sessions at once, idle ones reclaimed, nothing trusted.

`build_app(config, settings)` serves one `ScoringEngine` (built from a run configuration, like a training run's)
to up to `max_sessions` WebSocket sessions at once through OpenEnv's `HTTPEnvServer`, in its production mode:
`/ws` for episodes, `/health`, `/schema`, `/metadata`, `/sessions` (how many are open, of how many), and the two
routes OpenEnv's own URL validator reads, `/openapi.json` (the mode) and `/mcp` (it answers that this environment
has no MCP tools). The stateless HTTP `/reset` and `/step` of OpenEnv's simulation mode are not served: each would
build and drop an episode per request, a way to spend the render pool that no trainer needs; nor are OpenEnv's Task
API (this environment declares no tasks) or FastAPI's documentation pages.

What the wire cannot do: send a frame or a body above `max_message_bytes` (uvicorn closes the socket with 1009;
an HTTP body gets 413), open a session past the cap (an error frame with code CAPACITY_REACHED that says so), send
an action that is not a `PaintAction` (an error frame; the session lives on), keep a session that has been idle
for `session_timeout_s` (the reaper closes it), or see another session's episode (each holds only its own).

Run it with `python -m openenv_painting.server.app --preset offline` (docs/openenv.md), or as the Docker Space.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ground.run_config import RepaintSettings, RunConfig
from rewards.scoring.scoring_engine import RENDER_ATTEMPTS, ScoringEngine


logger = logging.getLogger("openenv_painting")

# A painting observation is ~2 KB of text, and the PNG (base64) of a 600x600 watercolour is ~0.3-0.7 MB; a
# frame in is one sketch (<= 256 KiB). 4 MiB holds either with room and keeps a hostile frame from costing more.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024


class ServerSettings(BaseModel):
    """How the OpenEnv server admits and keeps sessions."""

    model_config = ConfigDict(extra="forbid")

    max_sessions: int = Field(default=64, ge=1, description="Sessions open at once; one more is told 'at capacity'.")
    session_timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="A session idle this long is closed and its slot reclaimed; None = the longest a step can "
        "take (`longest_step_s`) plus a minute. OpenEnv counts activity when a step ends, so a step waiting its "
        "turn for the render pool must not look idle: a shorter timeout is refused.",
    )
    max_message_bytes: int = Field(
        default=MAX_MESSAGE_BYTES, ge=1024, description="Largest WebSocket frame or HTTP body accepted."
    )
    host: str = Field(default="127.0.0.1", description="Interface to listen on (0.0.0.0 in the Docker Space).")
    port: int = Field(default=8000, ge=0, le=65535, description="Port to listen on (0 = any free port).")


# uvicorn binds and starts the app's lifespan in well under a second; a minute means it will not.
STARTUP_TIMEOUT_S = 60.0
GRACEFUL_SHUTDOWN_S = 10
# What a step may spend on the offline or remote service terms after its render (remote ones retry).
SERVICE_MARGIN_S = 60.0


class SettingsMismatch(ValueError):
    """The server settings would let the reaper close a session in the middle of a step."""


class NotWritable(RuntimeError):
    """A place the server writes to cannot be written: it would answer /health and then fail every painting."""


def check_writable(run_dir: Path) -> None:
    """Refuse to start where the server cannot write its temporary files (Chromium's profile), its home (caches)
    and its run directory. A container started with a read-only root and no writable /tmp reported healthy and then
    failed every painting with advice for a development checkout."""
    import tempfile

    where = "a temporary directory"  # what gettempdir() looks for, when none of its candidates is writable
    try:
        for folder in (Path(tempfile.gettempdir()), Path.home(), run_dir):
            where = str(folder)
            folder.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=folder).close()
    except OSError as error:
        raise NotWritable(
            f"cannot write to {where} ({error.strerror or error}): the server writes Chromium's profile, its caches "
            "and its run directory there. A read-only root needs a writable /tmp: `docker run --read-only --tmpfs "
            "/tmp ...` (podman mounts one unless --read-only-tmpfs=false)"
        ) from None


def longest_step_s(config: RunConfig, max_sessions: int) -> float:
    """The longest one step can take when every session paints a sketch that runs to the deadline: it waits for
    the sessions ahead of it on the render slots, and the engine renders twice when a browser dies under it."""
    slots = config.render.browsers * config.render.pages_per_browser
    return RENDER_ATTEMPTS * config.render.deadline_s * -(-max_sessions // slots)


def session_timeout_s(config: RunConfig, settings: ServerSettings) -> float:
    """The idle timeout the server runs with: the one set, after checking it outlasts the longest step."""
    longest = longest_step_s(config, settings.max_sessions)
    if settings.session_timeout_s is None:
        return longest + SERVICE_MARGIN_S
    if settings.session_timeout_s <= longest:
        raise SettingsMismatch(
            f"session_timeout_s={settings.session_timeout_s} is not longer than the longest step ({longest:.0f} s "
            f"for {settings.max_sessions} sessions on {config.render.browsers}x{config.render.pages_per_browser} "
            "render slots): a session waiting for the pool would be reaped mid-step; raise it, or leave it unset"
        )
    return settings.session_timeout_s


class BodyLimit:
    """ASGI middleware: an HTTP request whose body is over `limit` bytes is answered 413 before any route runs."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _too_large(send, self.limit)
            return
        received = 0

        async def bounded_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                raise BodyTooLarge
            return message

        try:
            await self.app(scope, bounded_receive, send)
        except BodyTooLarge:
            await _too_large(send, self.limit)


class BodyTooLarge(Exception):
    pass


async def _too_large(send: Any, limit: int) -> None:
    body = f'{{"detail": "request body over {limit} bytes"}}'.encode()
    await send({"type": "http.response.start", "status": 413, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def build_app(config: RunConfig, settings: ServerSettings) -> Any:
    """The FastAPI app: OpenEnv's session server over one scoring engine for `config` (its run directory)."""
    from fastapi import FastAPI
    from fastapi.routing import APIRoute
    from openenv.core.env_server.http_server import HTTPEnvServer
    from openenv.core.env_server.types import ConcurrencyConfig, ServerMode

    from openenv_painting.models import PaintAction, PaintObservation, PaintState
    from openenv_painting.server.environment import SessionFactory

    timeout_s = session_timeout_s(config, settings)
    check_writable(Path(config.run_dir))
    engine = ScoringEngine(config.scoring, Path(config.run_dir))
    server = HTTPEnvServer(
        env=SessionFactory(engine, config.repaint or RepaintSettings()),
        action_cls=PaintAction,
        observation_cls=PaintObservation,
        env_name="painting",
        state_cls=PaintState,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=settings.max_sessions, session_timeout=timeout_s),
    )
    app = FastAPI(
        title="watercolour painting environment (OpenEnv)",
        on_shutdown=[engine.aclose],
        docs_url=None,
        redoc_url=None,
    )
    server.register_routes(app, mode=ServerMode.PRODUCTION)
    # OpenEnv 0.10 registers its Task API in every mode; this environment declares no tasks, and each of those
    # requests built an episode only to answer 501.
    app.router.routes[:] = [
        route for route in app.router.routes if not (isinstance(route, APIRoute) and "Task API" in route.tags)
    ]

    @app.get("/sessions")
    async def sessions() -> dict[str, int]:
        """Sessions open now and the cap: what a load test reads to see killed clients' sessions reclaimed."""
        status = server.get_capacity_status()
        return {"active": status.active_sessions, "max": status.max_sessions}

    async def started() -> None:
        logger.info("serving on http://%s:%d", settings.host, settings.port)

    app.router.on_startup.append(started)
    app.add_middleware(BodyLimit, limit=settings.max_message_bytes)
    log_configuration(config, settings, timeout_s)
    return app


def log_configuration(config: RunConfig, settings: ServerSettings, timeout_s: float) -> None:
    """The server's settings and the scoring it applies, one line each. The scoring settings name the variables
    that hold keys (`token_env`), never a key: the backends read those when they are built."""
    logger.info(
        "painting environment: preset %s, up to %d sessions (idle timeout %.0f s), render pool %dx%d, run directory %s",
        config.name,
        settings.max_sessions,
        timeout_s,
        config.render.browsers,
        config.render.pages_per_browser,
        config.run_dir,
    )
    repaint = config.repaint or RepaintSettings()
    scoring = {"scoring": config.scoring.model_dump(mode="json"), "repaint": repaint.model_dump(mode="json")}
    logger.info("configuration: %s", json.dumps(scoring))


def uvicorn_config(app: Any, settings: ServerSettings) -> Any:
    """uvicorn's config with the wire limits: frames over the limit close the socket (1009)."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        ws_max_size=settings.max_message_bytes,
        log_level="warning",
        lifespan="on",
        # Open sessions would hold a shutdown forever; a step in flight gets this long to answer.
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )


@contextmanager
def serving(config: RunConfig, settings: ServerSettings) -> Iterator[str]:
    """Serve in a thread of this process until the block ends; yields the base URL (tests and the load test)."""
    import uvicorn

    server = uvicorn.Server(uvicorn_config(build_app(config, settings), settings))
    thread = threading.Thread(target=server.run, name="openenv-painting", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the OpenEnv server did not start on {settings.host}:{settings.port}")
        time.sleep(0.05)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=STARTUP_TIMEOUT_S)


def preset_config(parser: argparse.ArgumentParser, preset: str, overrides: list[str]) -> RunConfig:
    """The preset with its `key=value` overrides; a bad one ends the command with one line naming the setting."""
    from pydantic import ValidationError

    from deployments.presets import load_config, parse_overrides

    try:
        return load_config(preset, parse_overrides(overrides))
    except ValidationError as error:
        reasons = []
        for item in error.errors():
            if item["type"] == "default_factory_not_called":  # a consequence of another error, not a cause
                continue
            where = ".".join(str(part) for part in item["loc"])
            reason = item["msg"].removeprefix("Value error, ")
            reasons.append(f"{where}: {reason}" if where else reason)
        parser.exit(2, f"{parser.prog}: preset {preset}: {'; '.join(reasons)}\n")
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: preset {preset}: {error}\n")


def main(argv: list[str] | None = None) -> None:
    """`python -m openenv_painting.server.app --preset offline [key=value ...]`: serve until stopped."""
    import uvicorn

    parser = argparse.ArgumentParser(
        prog="python -m openenv_painting.server.app", description="Serve the painting environment over OpenEnv."
    )
    parser.add_argument("--preset", default="offline", help="Run preset whose scoring the server applies.")
    parser.add_argument("--host", default=ServerSettings().host)
    parser.add_argument("--port", type=int, default=ServerSettings().port)
    parser.add_argument("--max-sessions", type=int, default=ServerSettings().max_sessions)
    parser.add_argument("--session-timeout-s", type=float, default=ServerSettings().session_timeout_s)
    parser.add_argument("overrides", nargs="*", help="Run-configuration overrides, key=value.")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = preset_config(parser, args.preset, args.overrides)
    settings = ServerSettings(
        host=args.host, port=args.port, max_sessions=args.max_sessions, session_timeout_s=args.session_timeout_s
    )
    try:
        app = build_app(config, settings)
    except NotWritable as error:
        parser.exit(2, f"{parser.prog}: {error}\n")
    uvicorn.Server(uvicorn_config(app, settings)).run()


if __name__ == "__main__":
    main()
