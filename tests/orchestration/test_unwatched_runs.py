"""A training run nobody watches, through a real Prefect server and worker (`scripts/prefect-local.sh up`).

SIGKILLed in the middle of a step (an OOM), the run ends Crashed by itself and the trigger shipped in prefect.yaml
puts its Space to sleep; retried, it trains on from its latest checkpoint with every rollout stored once. With its
worker killed too (a lost machine), nothing reports the run, and the heartbeat automation
(`deployments.automations`) marks it Crashed; the Space sleeps once a worker is back. The services are the
rehearsal's stand-ins: the scorer Space's app, and its Space on a stand-in Hub, which records every transition.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest

from deployments.presets import load_config
from tests.models import tiny_sketcher
from tests.servers.loopback import free_port
from tests.servers.prefect import LocalPrefect
from watercolour.rehearsal.services import SPACE_REPO, TOKEN, TOKEN_ENV, stand_ins
from watercolour.run_records.rollout_store import RolloutStore


pytestmark = [pytest.mark.browser, pytest.mark.slow]

STEPS = 5
GENERATIONS = 2
# The shortest heartbeat Prefect sends (30 s), and a crash window of two of them.
HEARTBEAT_S = 30
CRASH_AFTER_S = 70


@pytest.fixture(scope="module")
def services():
    probe = load_config("hps-only", {"aesthetic.url": "http://127.0.0.1:9"})
    with stand_ins(probe) as started:
        yield started


@pytest.fixture(scope="module")
def prefect(tmp_path_factory, services):
    local = LocalPrefect(tmp_path_factory.mktemp("prefect-home"), free_port())
    local.env |= {TOKEN_ENV: TOKEN, "WATERCOLOUR_CRASH_AFTER_S": str(CRASH_AFTER_S), "OMP_NUM_THREADS": "1"}
    started = local.script("up")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert "automation 'train: no heartbeat -> Crashed'" in started.stdout
        yield local
    finally:
        local.script("down")


def start_run(prefect: LocalPrefect, services, run_dir: Path) -> str:
    overrides = {
        **services.overrides,
        "training.model": str(tiny_sketcher()),
        "training.steps": STEPS,
        "training.save_steps": 1,
        "training.num_generations": GENERATIONS,
        "training.per_device_batch_size": GENERATIONS,
        "training.gradient_accumulation_steps": 1,
        "training.max_completion_length": 8,
        "render.browsers": 1,
    }
    heartbeat = f'env={{"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "{HEARTBEAT_S}"}}'
    output = prefect.prefect(
        "deployment", "run", "train/hps-only", "-p", f"overrides={json.dumps(overrides)}",
        "-p", f"run_dir={json.dumps(str(run_dir))}", "--job-variable", heartbeat,
    )  # fmt: skip
    return output.split("UUID:")[1].split()[0]


def flow_process(flow_run_id: str) -> int | None:
    """The pid of the process running `flow_run_id` (the worker starts it with PREFECT__FLOW_RUN_ID set), or None."""
    mark = f"PREFECT__FLOW_RUN_ID={flow_run_id}".encode()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark in (entry / "environ").read_bytes().split(b"\0"):
                return int(entry.name)
        except OSError:
            continue
    return None


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(1)
    raise AssertionError(f"{what} after {timeout_s} s")


def in_step(run_dir: Path, step: int, timeout_s: float = 600) -> None:
    """Return once `step`'s rollouts are stored, before its update and checkpoint: the middle of the step (a tiny
    step's update takes a tenth of a second, so the wait polls every 5 ms)."""
    shard = run_dir / "rollouts" / f"step-{step:05d}.parquet"
    deadline = time.monotonic() + timeout_s
    while not shard.exists():
        assert time.monotonic() < deadline, f"the run never stored step {step}'s rollouts"
        time.sleep(0.005)


def state(prefect: LocalPrefect, flow_run_id: str) -> dict:
    return prefect.get(f"/flow_runs/{flow_run_id}")["state"]


def space_sleep_runs(prefect: LocalPrefect, flow_run_id: str) -> list[dict]:
    runs = prefect.post("/flow_runs/filter", {"flows": {"name": {"any_": ["space-sleep"]}}})
    return [run for run in runs if run["parameters"].get("crashed_run") == f"prefect.flow-run.{flow_run_id}"]


@pytest.mark.timeout(1200)
def test_a_sigkilled_run_ends_crashed_its_space_sleeps_and_its_retry_resumes(prefect, services, tmp_path) -> None:
    hub = services.hub
    run_dir = tmp_path / "run"
    flow_run = start_run(prefect, services, run_dir)
    running = wait_for(lambda: flow_process(flow_run), 300, "the flow run never started")
    in_step(run_dir, 3)
    os.kill(running, signal.SIGKILL)
    assert hub.spaces[SPACE_REPO].stage == "RUNNING"
    assert not (run_dir / "checkpoints" / "checkpoint-3").exists(), "killed after step 3, not in it"

    crashed = wait_for(lambda: state(prefect, flow_run)["type"] == "CRASHED", 60, "the run was not reported Crashed")
    assert crashed
    sleeper = wait_for(
        lambda: [run for run in space_sleep_runs(prefect, flow_run) if run["state"]["type"] == "COMPLETED"],
        180,
        "no space-sleep run completed for the crashed run",
    )
    assert len(sleeper) == 1 and hub.spaces[SPACE_REPO].stage == "PAUSED"

    # Retried, it resumes from its latest checkpoint: the Space wakes again, every rollout is stored once.
    prefect.prefect("flow-run", "retry", flow_run)
    assert prefect.wait(flow_run, timeout_s=900) == "COMPLETED", prefect.worker_log()
    rows = RolloutStore(run_dir, GENERATIONS).rows()
    assert sorted((row["step"], row["index"]) for row in rows) == [
        (step, index) for step in range(1, STEPS + 1) for index in range(GENERATIONS)
    ]
    assert any(line.startswith("resuming this flow run's training in") for line in prefect.logs(flow_run))
    assert hub.spaces[SPACE_REPO].stage == "PAUSED"
    woken = [transition for transition in hub.transitions if transition[1:] == ("PAUSED", "BUILDING")]
    assert len(woken) == 2, hub.transitions


@pytest.mark.timeout(1200)
def test_a_run_whose_worker_is_lost_is_marked_crashed_by_its_missing_heartbeat(prefect, services, tmp_path) -> None:
    hub = services.hub
    run_dir = tmp_path / "run"
    flow_run = start_run(prefect, services, run_dir)
    running = wait_for(lambda: flow_process(flow_run), 300, "the flow run never started")
    in_step(run_dir, 2)
    # The worker first, so it cannot report the flow's death; then the flow, if it was not in the worker's session.
    os.killpg(int((Path(prefect.env["PREFECT_HOME"]) / "worker.pid").read_text()), signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(running, signal.SIGKILL)
    lost = time.monotonic()
    # The deployments applied again while the run is lost (`scripts/prefect-local.sh up` does so for a new worker):
    # the automation, unchanged, keeps watching the lost run's last heartbeat.
    registered = prefect.python("-m", "deployments.automations", "--crash-after-s", str(CRASH_AFTER_S))
    assert "is up to date" in registered, registered

    ended = wait_for(
        lambda: state(prefect, flow_run) if state(prefect, flow_run)["type"] == "CRASHED" else None,
        CRASH_AFTER_S + 2 * HEARTBEAT_S + 60,
        "the run stayed Running without a heartbeat",
    )
    assert "No heartbeat for 70 s" in ended["message"] and time.monotonic() - lost >= CRASH_AFTER_S - HEARTBEAT_S
    assert hub.spaces[SPACE_REPO].stage == "RUNNING", "nobody was left to put it to sleep"
    # A worker again (the machine back): the space-sleep run the trigger queued puts the Space to sleep.
    restarted = prefect.script("up")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    wait_for(
        lambda: [run for run in space_sleep_runs(prefect, flow_run) if run["state"]["type"] == "COMPLETED"],
        180,
        "no space-sleep run completed once a worker was back",
    )
    assert hub.spaces[SPACE_REPO].stage == "PAUSED"
