"""The painting environment over OpenEnv, against the real server on 127.0.0.1 (uvicorn in a thread, the real
scoring engine and Chromium): sessions at once without cross-talk, the session cap, malformed and oversized
input, idle and dropped sessions reclaimed, and the trainer's health check."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from deployments.presets import load_config
from ground.run_config import OpenEnvSettings
from openenv_painting.client import AtCapacity, PaintingClient
from openenv_painting.models import PaintAction
from openenv_painting.server.app import ServerSettings, SettingsMismatch, serving
from watercolour.operations.service_health import ServiceDown, probe_environment, services_to_check


pytestmark = [pytest.mark.browser, pytest.mark.slow]

SKETCHES = Path(__file__).resolve().parents[2] / "bench" / "sketches"
GATE = Path(__file__).resolve().parents[2] / "watercolour" / "fixtures" / "gate"
PROMPT = [{"role": "user", "content": "Paint a peach hibiscus."}]


def offline_config(run_dir: Path, deadline_s: float = 30.0):
    return load_config("offline", {"run_dir": str(run_dir), "render.browsers": 1, "render.deadline_s": deadline_s})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = ServerSettings(port=0, max_sessions=2, max_message_bytes=64 * 1024)
    with serving(offline_config(tmp_path_factory.mktemp("openenv")), settings) as url:
        yield url


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def exchange(connection, message) -> dict:
    connection.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(connection.recv(timeout=120))


async def paint(url: str, sketch: str, pictures: bool, step: int = 1):
    async with PaintingClient(base_url=url, message_timeout_s=120) as client:
        await client.reset(prompt=PROMPT, step=step, pictures=pictures)
        result = await client.step(PaintAction(sketch=sketch))
        return result, await client.state()


def test_sessions_painting_at_once_each_get_their_own_picture_and_state(server):
    hibiscus, anemone = (SKETCHES / "peach_hibiscus.js").read_text(), (SKETCHES / "blue_anemone.js").read_text()

    async def both():
        return await asyncio.gather(paint(server, hibiscus, True, step=3), paint(server, anemone, False, step=4))

    (mine, my_state), (theirs, their_state) = asyncio.run(both())
    assert mine.observation.passed and theirs.observation.passed
    picture = base64.b64decode(mine.observation.picture_png)
    assert hashlib.sha256(picture).hexdigest() == mine.observation.picture_sha256
    assert mine.observation.picture_sha256 != theirs.observation.picture_sha256
    assert theirs.observation.picture_png is None, "a session that did not ask for pictures is sent none"
    assert (my_state.rollout_step, my_state.rewards) == (3, [mine.observation.turn_reward])
    assert (their_state.rollout_step, their_state.rewards) == (4, [theirs.observation.turn_reward])
    # The same sketch alone, in a session of its own, gives the same picture: each got its own, not the other's.
    (again, _) = asyncio.run(paint(server, hibiscus, False))
    assert again.observation.picture_sha256 == mine.observation.picture_sha256


def test_a_session_past_the_cap_is_told_the_server_is_at_capacity(server):
    with connect(ws_url(server)) as first, connect(ws_url(server)) as second:
        exchange(first, {"type": "reset", "data": {}})
        exchange(second, {"type": "reset", "data": {}})
        with pytest.raises(AtCapacity, match="at capacity: 2/2 sessions"):
            asyncio.run(paint(server, "no sketch here", False))
    deadline = time.monotonic() + 10
    while httpx.get(f"{server}/sessions").json()["active"] and time.monotonic() < deadline:
        time.sleep(0.1)
    result, _ = asyncio.run(paint(server, "no sketch here", False))
    assert result.observation.passed is False and result.observation.turn_reward == 0.0


def test_malformed_messages_are_answered_with_errors_and_the_session_lives_on(server):
    with connect(ws_url(server)) as connection:
        assert exchange(connection, "{not json")["data"]["code"] == "INVALID_JSON"
        assert exchange(connection, {"type": "step", "data": {"sketch": 5}})["data"]["code"] == "VALIDATION_ERROR"
        extra = {"type": "step", "data": {"sketch": "x", "run_dir": "/etc"}}
        assert exchange(connection, extra)["data"]["code"] == "VALIDATION_ERROR"
        bad_step = exchange(connection, {"type": "reset", "data": {"step": "two"}})
        assert bad_step["data"]["code"] == "EXECUTION_ERROR" and "step must be" in bad_step["data"]["message"]
        bad_pictures = exchange(connection, {"type": "reset", "data": {"pictures": "false"}})
        assert "pictures must be true or false" in bad_pictures["data"]["message"]
        assert exchange(connection, {"type": "launch"})["data"]["code"] == "UNKNOWN_TYPE"
        assert exchange(connection, {"type": "reset", "data": {"prompt": PROMPT}})["type"] == "observation"
        painted = exchange(connection, {"type": "step", "data": {"sketch": "no sketch here"}})
        assert painted["type"] == "observation" and painted["data"]["observation"]["passed"] is False


def test_an_oversized_frame_closes_only_its_own_socket_and_an_oversized_body_gets_413(server):
    with connect(ws_url(server), max_size=None) as connection:
        exchange(connection, {"type": "reset", "data": {}})
        connection.send(json.dumps({"type": "step", "data": {"sketch": "x" * (65 * 1024)}}))
        with pytest.raises(ConnectionClosed) as closed:
            connection.recv(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
    assert httpx.post(f"{server}/mcp", content=b"x" * (65 * 1024)).status_code == 413
    result, _ = asyncio.run(paint(server, "no sketch here", False))
    assert result.observation.passed is False


def test_the_health_check_finds_the_painting_server_and_names_the_fix_when_it_is_down(server, tmp_path):
    from tasks.health import check_environment

    config = load_config("offline", {"run_dir": str(tmp_path), "openenv.url": server})
    assert services_to_check(config) == ["environment"], "the server does the scoring: it is what the run calls"
    assert "painting environment up (0/2 sessions open)" == check_environment.fn(config)
    with pytest.raises(ServiceDown, match="unreachable"):
        probe_environment(OpenEnvSettings(url="http://127.0.0.1:9"))


def test_a_session_timeout_shorter_than_the_longest_step_is_refused(tmp_path):
    with pytest.raises(SettingsMismatch, match="longest step"):
        with serving(offline_config(tmp_path), ServerSettings(port=0, max_sessions=8, session_timeout_s=30)):
            pass


def test_dropped_and_idle_sessions_are_reclaimed(tmp_path):
    # Longest step: 2 attempts x 2 s deadline x 1 round of the 2 render slots = 4 s, so a 5 s timeout is allowed.
    settings = ServerSettings(port=0, max_sessions=2, session_timeout_s=5.0)
    with serving(offline_config(tmp_path, deadline_s=2.0), settings) as url:
        dropped = connect(ws_url(url))
        exchange(dropped, {"type": "reset", "data": {}})
        idle = connect(ws_url(url))
        exchange(idle, {"type": "reset", "data": {}})
        assert httpx.get(f"{url}/sessions").json() == {"active": 2, "max": 2}
        dropped.socket.shutdown(socket.SHUT_RDWR)  # the client dies: no close frame, the connection just goes
        assert wait_for_sessions(url, 1, within_s=5), "a dropped client's session was not reclaimed at once"
        assert wait_for_sessions(url, 0, within_s=15), "an idle session outlived the session timeout"
        reply = exchange(idle, {"type": "step", "data": {"sketch": "no sketch here"}})
        assert reply["data"]["code"] == "EXECUTION_ERROR" and "open a new session" in reply["data"]["message"]
        idle.close()


def wait_for_sessions(url: str, active: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if httpx.get(f"{url}/sessions").json()["active"] == active:
            return True
        time.sleep(0.2)
    return False


def test_a_two_painting_episode_through_the_server_matches_the_in_process_episode(server, tmp_path):
    from episodes.painting_env import PaintingEnv
    from ground.run_config import RepaintSettings
    from openenv_painting.remote_env import RemotePaintingEnv
    from rewards.scoring.scoring_engine import ScoringEngine

    sketches = [(SKETCHES / "rose_cosmos.js").read_text(), (GATE / "bare_ellipse.js").read_text()]
    config = offline_config(tmp_path)
    settings = RepaintSettings()

    async def episode(env):
        opening = env.reset(prompt=PROMPT)
        texts = [await env.paint(sketch) for sketch in sketches]
        return opening, texts, env.reward

    async def in_process():
        engine = ScoringEngine(config.scoring, tmp_path)
        try:
            return await episode(PaintingEnv(engine, settings, step=lambda: 2))
        finally:
            await engine.aclose()

    local = asyncio.run(in_process())
    remote_env = RemotePaintingEnv(OpenEnvSettings(url=server), settings, step=lambda: 2)
    remote = asyncio.run(episode(remote_env))
    assert remote == local
    rewards = [turn.parts.reward for turn in remote_env.turns]
    assert rewards[1] == 0.0 and rewards[0] > 0, "a good painting, then a refused one"
    picture = remote_env.turns[0].parts.verdict.render.png
    assert picture is not None and picture.startswith(b"\x89PNG"), "the turn's parts carry the PNG, as in process"


def test_a_vlm_policy_is_shown_the_png_through_the_server_as_in_process(server, tmp_path):
    from episodes.painting_env import PaintingEnv
    from ground.run_config import RepaintSettings
    from openenv_painting.remote_env import RemotePaintingEnv
    from rewards.scoring.scoring_engine import ScoringEngine

    sketch = (SKETCHES / "peach_hibiscus.js").read_text()
    settings = RepaintSettings(turns=2, vision=True)  # the server's episodes allow two

    async def painted(env):
        env.reset(prompt=PROMPT)
        return await env.paint(sketch)

    async def in_process():
        engine = ScoringEngine(offline_config(tmp_path).scoring, tmp_path)
        try:
            return await painted(PaintingEnv(engine, settings, step=lambda: 5))
        finally:
            await engine.aclose()

    async def remotely():
        env = RemotePaintingEnv(OpenEnvSettings(url=server), settings, step=lambda: 5)
        try:
            return await painted(env)
        finally:
            await env._aclose()  # one painting of two: the episode is open until its trainer closes it

    local = asyncio.run(in_process())
    remote = asyncio.run(remotely())
    assert [block["type"] for block in remote] == ["image", "text"] == [block["type"] for block in local]
    assert remote[1] == local[1]
    assert remote[0]["image"].tobytes() == local[0]["image"].tobytes(), "the same picture, pixel for pixel"


def test_the_mcp_route_cannot_paint_and_its_sessions_count_against_the_cap(server):
    def rpc(method, **params):
        return httpx.post(f"{server}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).json()

    # A client's goodbye reaches the server after the client has moved on, so the last test's session may still be
    # closing: give it the few seconds a dropped socket is allowed.
    assert wait_for_sessions(server, 0, within_s=10), "every earlier session was given back"
    painted = rpc("tools/call", name="paint", arguments={"sketch": "function setup() {}"})
    assert painted["error"]["message"] == "Environment does not support MCP"
    assert httpx.get(f"{server}/sessions").json()["active"] == 0, "no episode was built outside the cap"
    opened = [rpc("openenv/session/create") for _ in range(3)]
    assert [("result" in reply) for reply in opened] == [True, True, False]
    assert "at capacity" in opened[2]["error"]["message"]
    for reply in opened[:2]:
        assert rpc("openenv/session/close", session_id=reply["result"]["session_id"])["result"]["closed"]


def test_the_server_answers_its_documented_routes_and_no_others(server):
    served = set(httpx.get(f"{server}/openapi.json").json()["paths"])
    assert served == {"/health", "/schema", "/metadata", "/mcp", "/sessions"}, "plus the /ws socket"
    for gone in ("/docs", "/redoc", "/list_environments"):
        assert httpx.get(server + gone).status_code == 404, gone
    assert httpx.post(f"{server}/painting/tasks", json={}).status_code == 404, "OpenEnv's Task API"
    metadata = httpx.get(f"{server}/metadata").json()
    assert metadata["name"] == "watercolour_painting" and metadata["version"] == "0.1.0"
    assert "`paint`" in metadata["description"] and "Up to 2 paintings an episode" in metadata["description"]


async def test_the_server_logs_its_start_its_configuration_and_each_dead_letter(
    tmp_path, caplog, monkeypatch, flower_sketch
):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_never_logged")
    with socket.socket() as closed:  # a scorer that is not there: every aesthetic score is a dead letter
        closed.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{closed.getsockname()[1]}"
    overrides = {"aesthetic.backend": "hpsv3", "aesthetic.url": nowhere, "aesthetic.attempts": 1}
    config = load_config("offline", {"run_dir": str(tmp_path), "render.browsers": 1, **overrides})
    caplog.set_level("INFO", logger="openenv_painting")
    with serving(config, ServerSettings(port=0, max_sessions=2)) as url:
        result, _ = await paint(url, flower_sketch, pictures=False)
    assert result.reward is None
    lines = [record.getMessage() for record in caplog.records if record.name == "openenv_painting"]
    assert lines[0].startswith("painting environment: preset offline, up to 2 sessions")
    assert lines[1].startswith("configuration: ") and nowhere in lines[1] and '"token_env": "HF_TOKEN"' in lines[1]
    assert lines[2] == "serving on http://127.0.0.1:0"
    [letter] = [line for line in lines if line.startswith("dead letter: ")]
    assert letter.startswith("dead letter: aesthetic failed after 1 attempt(s)") and "ConnectError" in letter
    assert "hf_secret_never_logged" not in caplog.text


DOCS = Path(__file__).resolve().parents[2] / "docs" / "openenv.md"


def documented_exchange() -> list[tuple[dict, dict | None]]:
    """The raw frames of docs/openenv.md's "The wire" section: each one sent (`>`) with the reply it shows (`<`)."""
    text = DOCS.read_text()
    block = text[text.index("### The wire") :].split("```text\n", 1)[1].split("```", 1)[0]
    frames = [(line[0], json.loads(line[2:])) for line in block.splitlines()]
    sent = [(frame, frames[i + 1][1] if i + 1 < len(frames) and frames[i + 1][0] == "<" else None)
            for i, (way, frame) in enumerate(frames) if way == ">"]  # fmt: skip
    return sent


def assert_shaped_like(shown, got, where: str = "reply") -> None:
    """`got` has every key `shown` has, each of the same kind; whole numbers, booleans, nulls and the message type
    are equal (a painting's scores and words depend on the render, its shape does not)."""
    if isinstance(shown, dict):
        assert isinstance(got, dict), where
        for key, value in shown.items():
            assert key in got, f"{where}.{key} is documented and not sent"
            assert_shaped_like(value, got[key], f"{where}.{key}")
    elif shown is None or isinstance(shown, bool | int):
        assert got == shown, where
    else:
        assert type(got) is type(shown), where


def test_the_documented_raw_websocket_exchange_is_what_the_server_answers(server):
    exchange_shown = documented_exchange()
    assert [frame["type"] for frame, _ in exchange_shown] == ["reset", "step", "state", "close"]
    with connect(ws_url(server), max_size=8 * 2**20) as connection:
        for frame, shown in exchange_shown:
            connection.send(json.dumps(frame))
            if shown is not None:
                assert_shaped_like(shown, json.loads(connection.recv(timeout=120)), frame["type"])


def test_the_server_refuses_to_start_where_it_cannot_write_and_names_the_fix(tmp_path):
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    # Without the check the server starts and serves (and this times out): it fails only when it paints.
    started = subprocess.run(
        [sys.executable, "-m", "openenv_painting.server.app", "--port", "0", f"run_dir={not_a_folder / 'runs'}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 2
    assert f"cannot write to {not_a_folder / 'runs'} (Not a directory)" in started.stderr
    assert "A read-only root needs a writable /tmp: `docker run --read-only --tmpfs /tmp ...`" in started.stderr
