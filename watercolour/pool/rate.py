"""The rating page: a local web app that shows one candidate render at a time and records a person's tier for it.

Keys 1 love, 2 okay, 3 meh, 4 nope; `u` or Backspace undoes the last rating; `g` switches between one candidate
at a time and a grid of eight (arrow keys move the focus, the number keys rate the focused one). Every rating
rewrites `ratings.json` atomically, so closing the tab (or the server) loses nothing and reopening resumes at the
first unrated candidate. The page polls for new candidates, so rating can run alongside `pool generate`.

When a `pool` flow run waits for this folder's ratings (it left `awaiting.json` here when it suspended), the page
offers Enter: send the ratings and resume that flow run through the Prefect API (PREFECT_API_URL).
"""

from __future__ import annotations

import json
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from watercolour.pool.candidates import (
    AWAITING,
    RATING_TIERS,
    RatingsSubmitted,
    read_awaiting,
    read_candidates,
    read_ratings,
    write_ratings,
)


class NotWaiting(ValueError):
    """No flow run waits for these ratings (any more); the message says where the ratings are."""


class RatingDesk:
    """The candidate folder as the page sees it; one lock, because the server answers on several threads."""

    def __init__(self, folder: Path, show_refused: bool = False) -> None:
        self.folder = folder
        self.show_refused = show_refused
        self.lock = threading.Lock()

    def items(self) -> list[dict[str, Any]]:
        return [
            {
                "id": c.id,
                "png": c.png,
                "js": c.js,
                "model": c.model,
                "round": c.round,
                "subject": c.subject,
                "coverage": c.coverage,
            }
            for c in read_candidates(self.folder)
            if c.png and (c.passed or self.show_refused)
        ]

    def state(self, undone: str | None = None) -> dict[str, Any]:
        ratings = read_ratings(self.folder)
        awaiting = read_awaiting(self.folder)
        return {
            "items": self.items(),
            "tiers": ratings.tiers,
            "order": ratings.order,
            "undone": undone,
            "awaiting": awaiting.flow_run_name if awaiting else None,
        }

    def rate(self, candidate_id: str, tier: str) -> dict[str, Any]:
        if tier not in RATING_TIERS:
            raise ValueError(f"unknown tier {tier!r}: use one of {', '.join(RATING_TIERS)}")
        with self.lock:
            if candidate_id not in {item["id"] for item in self.items()}:
                raise ValueError(f"no candidate {candidate_id!r} on the page")
            ratings = read_ratings(self.folder)
            ratings.rate(candidate_id, tier)  # type: ignore[arg-type]  # checked against RATING_TIERS above
            write_ratings(self.folder, ratings)
        return self.state()

    def undo(self) -> dict[str, Any]:
        with self.lock:
            ratings = read_ratings(self.folder)
            undone = ratings.undo()
            write_ratings(self.folder, ratings)
        return self.state(undone)

    def finish(self) -> dict[str, Any]:
        """Resume the flow run waiting for these ratings, handing it every saved rating as its typed input."""
        from uuid import UUID

        from prefect.exceptions import FlowPauseTimeout, NotPausedError
        from prefect.flow_runs import resume_flow_run

        with self.lock:
            awaiting = read_awaiting(self.folder)
            if awaiting is None:
                raise NotWaiting(f"no flow run waits for the ratings in {self.folder}")
            submitted = RatingsSubmitted(tiers=read_ratings(self.folder).tiers)
            try:
                resume_flow_run(UUID(awaiting.flow_run_id), run_input=submitted.model_dump())
            except (NotPausedError, FlowPauseTimeout) as error:
                raise NotWaiting(
                    f"flow run {awaiting.flow_run_name} no longer waits ({error}); the ratings stay saved in "
                    f"{self.folder}: run pool/build with candidates={self.folder} to pack them"
                ) from None
            (self.folder / AWAITING).unlink(missing_ok=True)
        return self.state()

    def file(self, name: str) -> bytes | None:
        """A listed candidate's render or sketch; anything else (a path outside the folder) is not served."""
        listed = {item[kind] for item in self.items() for kind in ("png", "js")}
        return (self.folder / name).read_bytes() if name in listed else None


def page() -> bytes:
    return resources.files("watercolour.pool").joinpath("rate.html").read_bytes()


def make_server(desk: RatingDesk, port: int = 8765) -> ThreadingHTTPServer:
    """A server on 127.0.0.1 (never another interface: the page writes files); port 0 picks a free one."""

    class Handler(BaseHTTPRequestHandler):
        def send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.send_header("cache-control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def send_json(self, status: int, body: Any) -> None:
            self.send(status, json.dumps(body).encode(), "application/json")

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path == "/":
                return self.send(200, page(), "text/html; charset=utf-8")
            if self.path == "/state":
                return self.send_json(200, desk.state())
            if self.path.startswith("/file/"):
                name = self.path.removeprefix("/file/")
                data = desk.file(name)
                kind = "image/png" if name.endswith(".png") else "text/plain; charset=utf-8"
                return self.send(200, data, kind) if data is not None else self.send_json(404, {"error": name})
            self.send_json(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            try:
                if self.path == "/rate":
                    return self.send_json(200, desk.rate(body["id"], body["tier"]))
                if self.path == "/undo":
                    return self.send_json(200, desk.undo())
                if self.path == "/finish":
                    return self.send_json(200, desk.finish())
            except (KeyError, ValueError) as error:
                return self.send_json(400, {"error": str(error)})
            self.send_json(404, {"error": "not found"})

        def log_message(self, *args: Any) -> None:
            return None

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def serve(folder: Path, port: int, open_browser: bool, show_refused: bool) -> None:
    """Serve until interrupted."""
    read_candidates(folder)  # fail now, naming the fix, if there is nothing to rate
    server = make_server(RatingDesk(folder, show_refused), port)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"rating {folder} at {url} (Ctrl-C to stop; ratings are saved on every key)", flush=True)
    if open_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
