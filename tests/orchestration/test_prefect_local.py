"""`scripts/prefect-local.sh` does what it says: its env line finds this checkout's `prefect`, `up` notices a changed
environment (restarting the worker, or refusing while runs are in flight), and `down` returns only once both the
worker and the server are gone. A real server and worker on a free port with a temporary PREFECT_HOME.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.servers.loopback import free_port


ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "prefect-local.sh"
pytestmark = pytest.mark.slow


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_local_stack_restarts_a_worker_whose_environment_changed_and_stops_cleanly(tmp_path):
    port = free_port()
    home = tmp_path / "prefect-home"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "WATERCOLOUR_", "PREFECT_"))}
    base.update(PREFECT_HOME=str(home), PREFECT_LOCAL_PORT=str(port), HF_HUB_OFFLINE="1")
    api = f"http://127.0.0.1:{port}/api"

    def script(action: str, **extra: str) -> subprocess.CompletedProcess:
        env = {**base, **extra}
        return subprocess.run(
            [str(SCRIPT), action], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=400
        )

    def worker_pid() -> int:
        return int((home / "worker.pid").read_text())

    try:
        first = script("up")
        assert first.returncode == 0, first.stdout + first.stderr
        assert first.stdout.count("eval ") == 1 and "prefect worker start" not in first.stdout
        assert "train/smoke" in first.stdout
        worker, server = worker_pid(), int((home / "server.pid").read_text())

        # The env line puts this checkout's prefect first on PATH, so the README's next command is found.
        exports = script("env").stdout
        found = subprocess.run(
            ["bash", "-c", f"{exports}\ncommand -v prefect"],
            env={"PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
        )
        assert found.stdout.strip() == str(ROOT / ".venv" / "bin" / "prefect")

        again = script("up")
        assert "environment unchanged" in again.stdout and worker_pid() == worker

        # A run in flight: a changed environment is named, and the worker is left alone.
        flow_id = httpx.post(f"{api}/flows/", json={"name": "in-flight"}).raise_for_status().json()["id"]
        run = httpx.post(
            f"{api}/flow_runs/", json={"flow_id": flow_id, "state": {"type": "RUNNING", "name": "Running"}}
        ).raise_for_status()
        refused = script("up", HF_TOKEN="hf_not_a_real_token")
        assert refused.returncode == 1 and "HF_TOKEN" in refused.stderr and "not restarting" in refused.stderr
        assert "hf_not_a_real_token" not in refused.stdout + refused.stderr + (home / "worker.env").read_text()
        assert worker_pid() == worker and alive(worker)

        httpx.post(
            f"{api}/flow_runs/{run.json()['id']}/set_state",
            json={"state": {"type": "COMPLETED", "name": "Completed"}, "force": True},
        ).raise_for_status()
        restarted = script("up", HF_TOKEN="hf_not_a_real_token", HF_HUB_OFFLINE="0")
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        assert "environment changed (HF_HUB_OFFLINE HF_TOKEN): restarting" in restarted.stdout
        assert worker_pid() != worker and not alive(worker)
        worker = worker_pid()
    finally:
        stopped = script("down")
    assert stopped.returncode == 0
    assert not alive(worker) and not alive(server)
    assert f"stopped the worker (pid {worker})" in stopped.stdout
    assert not (home / "worker.pid").exists() and not (home / "server.pid").exists()
