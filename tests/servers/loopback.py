"""A scripted HTTP server on 127.0.0.1: each test hands it a function from request to reply."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from watercolour.rehearsal.services import StandInServer


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON; str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON


Handler = Callable[[Request], Reply]


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now: for a server started in another process, or a service that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LoopbackServer:
    """Serves POSTs with `handle` until closed; records every request. Use as a context manager."""

    def __init__(self, handle: Handler) -> None:
        self.handle = handle
        self.requests: list[Request] = []
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("content-length", 0))).decode()
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                owner.requests.append(request)
                reply = owner.handle(request)
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self._server = StandInServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def failing_first(times: int, failure: Reply, then: Handler) -> Handler:
    """A handler that answers `failure` to the first `times` requests, then defers to `then`."""
    count = 0
    lock = threading.Lock()

    def handle(request: Request) -> Reply:
        nonlocal count
        with lock:
            count += 1
            failed = count <= times
        return failure if failed else then(request)

    return handle
