"""A real Prefect server and worker started by the documented script (`scripts/prefect-local.sh`), on a free port
with a temporary PREFECT_HOME, and the API calls the deployment tests make against it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import httpx


ROOT = Path(__file__).resolve().parents[2]
PREFECT = str(ROOT / ".venv" / "bin" / "prefect")


class LocalPrefect:
    def __init__(self, home: Path, port: int) -> None:
        self.api = f"http://127.0.0.1:{port}/api"
        self.env = {
            **os.environ,
            "PREFECT_HOME": str(home),
            "PREFECT_LOCAL_PORT": str(port),
            "PREFECT_API_URL": self.api,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "HF_HUB_OFFLINE": "1",
        }

    def script(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(ROOT / "scripts" / "prefect-local.sh"), *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=400,
        )

    def prefect(self, *args: str) -> str:
        done = subprocess.run([PREFECT, *args], env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def python(self, *args: str) -> str:
        """This checkout's Python against this server (`python -m deployments.automations`, say); its stdout."""
        done = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "python"), *args], env=self.env, cwd=ROOT, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def get(self, path: str) -> dict:
        return httpx.get(self.api + path, timeout=30).raise_for_status().json()

    def post(self, path: str, body: dict) -> list:
        return httpx.post(self.api + path, json=body, timeout=30).raise_for_status().json()

    def run_deployment(self, name: str, **parameters) -> str:
        args = ["deployment", "run", name]
        for key, value in parameters.items():
            args += ["-p", f"{key}={json.dumps(value)}"]
        output = self.prefect(*args)
        match = re.search(r"UUID:\s*([0-9a-f-]{36})", output)
        assert match, output
        return match[1]

    def wait(self, flow_run_id: str, timeout_s: float = 400) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = self.get(f"/flow_runs/{flow_run_id}")["state"]["type"]
            if state in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
                return state
            time.sleep(2)
        raise TimeoutError(f"flow run {flow_run_id} still {state} after {timeout_s} s")

    def task_states(self, flow_run_id: str) -> dict[str, str]:
        runs = self.post("/task_runs/filter", {"flow_runs": {"id": {"any_": [flow_run_id]}}})
        return {run["name"]: run["state"]["name"] for run in runs}

    def logs(self, flow_run_id: str, expect_steps: int = 0, timeout_s: float = 60) -> list[str]:
        """The flow run's log messages, oldest first, once `expect_steps` step lines have arrived (a run's logs are
        shipped in batches and can land after its state does)."""
        deadline = time.monotonic() + timeout_s
        while True:
            body = {"logs": {"flow_run_id": {"any_": [flow_run_id]}}, "sort": "TIMESTAMP_ASC"}
            messages = [entry["message"] for entry in self.post("/logs/filter", body)]
            arrived = sum(message.startswith("step ") for message in messages) >= expect_steps
            if (arrived and messages) or time.monotonic() > deadline:
                return messages
            time.sleep(1)

    def worker_log(self) -> str:
        return (Path(self.env["PREFECT_HOME"]) / "worker.log").read_text()[-6000:]
