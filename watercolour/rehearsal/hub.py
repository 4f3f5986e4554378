"""A stand-in Hugging Face Hub on 127.0.0.1: the Space runtime, repository and upload endpoints `huggingface_hub.HfApi`
calls, for a rehearsal's Space (`watercolour rehearse`) and the tests.

It runs on a free port, in a thread, so the real client code (its URL building, headers, response parsing,
`wait_for_space` polling) runs against it; another process reaches it through `space.endpoint` (or `HF_ENDPOINT`) and
the token. It records every call, every repository created (with its type and Space SDK) and every Space stage
transition, so a rehearsal can say what the run did to its Space and a test can assert on it. The token's owner is
`user` (`whoami`); an `/api/` call without the token is answered 401, as the Hub answers a bad token.

Stages advance on reads, not on wall time, so runs are deterministic: after a restart each `GET .../runtime` moves
the Space one stage along BUILDING -> APP_STARTING -> RUNNING. A Space also serves its app's `/health` at
`/apps/{owner}/{name}/health`; like the real scorer it answers `loaded: false` for a few polls after RUNNING, because a
running container is not a loaded model.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from dataclasses import dataclass, field

import uvicorn
import yaml
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from huggingface_hub.constants import SPACES_SDK_TYPES


BOOT_SEQUENCE = ["BUILDING", "APP_STARTING", "RUNNING"]


@dataclass
class Space:
    """The hub-side state of one Space."""

    stage: str = "RUNNING"
    hardware: str = "a10g-small"
    sleep_time: int | None = None
    # Health polls answered `loaded: false` after the Space reaches RUNNING.
    load_polls: int = 2
    _boot: list[str] = field(default_factory=list)
    _health_polls: int = 0


@dataclass
class Call:
    method: str
    path: str
    authorized: bool


class HubLoopback:
    """`with HubLoopback() as hub:` serves the Hub on `hub.endpoint` until the block ends."""

    def __init__(self, token: str = "hf_loopback_token", user: str = "me") -> None:
        self.token = token
        self.user = user
        self.spaces: dict[str, Space] = {}
        self.calls: list[Call] = []
        self.transitions: list[tuple[str, str, str]] = []
        self.repos: dict[str, dict[str, bytes]] = {}
        # What each `create_repo` asked for, as sent: type, sdk, private/visibility, hardware.
        self.created: dict[str, dict] = {}
        # Every README.md the Hub was asked to validate (before a commit holding one) and accepted.
        self.validated_cards: list[str] = []
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.endpoint = ""

    # ---- state helpers used by tests -------------------------------------------------------------------------

    def add_space(self, repo_id: str, **state) -> Space:
        self.spaces[repo_id] = Space(**state)
        return self.spaces[repo_id]

    def app_url(self, repo_id: str) -> str:
        return f"{self.endpoint}/apps/{repo_id}"

    def calls_to(self, suffix: str) -> list[Call]:
        return [call for call in self.calls if call.path.endswith(suffix)]

    def _move(self, repo_id: str, space: Space, stage: str) -> None:
        if stage != space.stage:
            self.transitions.append((repo_id, space.stage, stage))
            space.stage = stage
            space._health_polls = 0

    def _runtime(self, space: Space) -> dict:
        return {
            "stage": space.stage,
            "hardware": {"current": space.hardware if space.stage == "RUNNING" else None, "requested": space.hardware},
            "gcTimeout": space.sleep_time,
            "storage": None,
            "devMode": False,
        }

    # ---- the app ---------------------------------------------------------------------------------------------

    def _app(self) -> FastAPI:
        app = FastAPI()

        @app.middleware("http")
        async def record(request: Request, call_next):
            authorized = request.headers.get("authorization") == f"Bearer {self.token}"
            self.calls.append(Call(request.method, request.url.path, authorized))
            if request.url.path.startswith("/api/") and not authorized:
                return JSONResponse({"error": "Invalid credentials in Authorization header"}, status_code=401)
            return await call_next(request)

        self._space_routes(app)
        self._repo_routes(app)
        return app

    def _space_routes(self, app: FastAPI) -> None:
        """A Space's runtime (read, restart, pause, sleep time) and its app's health route."""

        def space_of(owner: str, name: str) -> tuple[str, Space]:
            repo_id = f"{owner}/{name}"
            if repo_id not in self.spaces:
                raise HTTPException(404, detail="Repository not found")
            return repo_id, self.spaces[repo_id]

        @app.get("/api/spaces/{owner}/{name}/runtime")
        def runtime(owner: str, name: str) -> dict:
            repo_id, space = space_of(owner, name)
            with self._lock:
                if space._boot:
                    self._move(repo_id, space, space._boot.pop(0))
                return self._runtime(space)

        @app.post("/api/spaces/{owner}/{name}/restart")
        def restart(owner: str, name: str) -> dict:
            repo_id, space = space_of(owner, name)
            with self._lock:
                space._boot = list(BOOT_SEQUENCE[1:])
                self._move(repo_id, space, BOOT_SEQUENCE[0])
                return self._runtime(space)

        @app.post("/api/spaces/{owner}/{name}/pause")
        def pause(owner: str, name: str) -> dict:
            repo_id, space = space_of(owner, name)
            with self._lock:
                space._boot = []
                self._move(repo_id, space, "PAUSED")
                return self._runtime(space)

        @app.post("/api/spaces/{owner}/{name}/sleeptime")
        async def sleeptime(owner: str, name: str, request: Request) -> dict:
            repo_id, space = space_of(owner, name)
            space.sleep_time = int((await request.json())["seconds"])
            return self._runtime(space)

        @app.get("/apps/{owner}/{name}/health")
        def app_health(owner: str, name: str) -> dict:
            _, space = space_of(owner, name)
            if space.stage != "RUNNING":
                # A sleeping or paused Space's app does not answer; the real router shows a holding page.
                raise HTTPException(503, detail=f"Space is {space.stage}")
            space._health_polls += 1
            return {"loaded": space._health_polls > space.load_polls, "error": None}

    def _repo_routes(self, app: FastAPI) -> None:
        """The account and what a push to the Hub calls: the card's check, a repository's creation, its commits."""

        @app.get("/api/whoami-v2")
        def whoami() -> dict:
            return {
                "type": "user",
                "name": self.user,
                "fullname": self.user,
                "orgs": [],
                "auth": {"type": "access_token", "accessToken": {"displayName": "loopback", "role": "write"}},
            }

        @app.post("/api/validate-yaml")
        async def validate_yaml(request: Request):
            # What the Hub checks of a README.md before a commit holds it: the front matter is a YAML mapping, and
            # a Space's names an SDK the Hub builds with.
            body = await request.json()
            content = body["content"]
            front = content.split("---\n", 2)[1] if content.startswith("---\n") else ""
            try:
                card = yaml.safe_load(front) or {}
            except yaml.YAMLError as problem:
                card = f"invalid YAML in the front matter: {problem}"
            if not isinstance(card, dict):
                error = card if isinstance(card, str) else "the front matter is not a mapping"
            elif body.get("repoType") == "space" and card.get("sdk") not in SPACES_SDK_TYPES:
                error = f"a Space card's sdk must be one of {SPACES_SDK_TYPES}"
            else:
                self.validated_cards.append(content)
                return {"errors": [], "warnings": []}
            return JSONResponse({"errors": [{"message": error}], "warnings": []}, status_code=400)

        @app.post("/api/repos/create")
        async def create_repo(request: Request) -> dict:
            body = await request.json()
            # No organization: the Hub creates the repository in the token owner's namespace.
            repo_id = f"{body.get('organization') or self.user}/{body['name']}"
            self.created[repo_id] = {key: value for key, value in body.items() if key not in ("name", "organization")}
            self.repos.setdefault(repo_id, {})
            prefix = {"dataset": "datasets/", "space": "spaces/"}.get(body.get("type"), "")
            return {"url": f"{self.endpoint}/{prefix}{repo_id}"}

        @app.post("/api/{kind}/{owner}/{name}/preupload/{revision}")
        async def preupload(kind: str, owner: str, name: str, revision: str, request: Request) -> dict:
            files = (await request.json())["files"]
            # Every file goes inline in the commit ("regular"): no LFS or Xet storage to stand in for.
            return {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]}

        @app.post("/api/{kind}/{owner}/{name}/commit/{revision}")
        async def commit(kind: str, owner: str, name: str, revision: str, request: Request) -> dict:
            repo_id = f"{owner}/{name}"
            files = self.repos.setdefault(repo_id, {})
            for line in (await request.body()).splitlines():
                item = json.loads(line)
                if item["key"] == "file":
                    files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            oid = f"{len(self.calls):040x}"
            return {"commitUrl": f"{self.endpoint}/{repo_id}/commit/{oid}", "commitOid": oid}

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def __enter__(self) -> HubLoopback:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(self._app(), log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the hub loopback did not start within 10 s")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=10)
