"""The documented local setup, for real: `scripts/prefect-local.sh up` starts a Prefect server and a worker on a
free port with a temporary PREFECT_HOME, registers prefect.yaml, and `prefect deployment run train/smoke` runs to
Completed through the worker; a run failed on purpose is retried and trains on from its checkpoint.

One server for the whole module: each start costs 15+ s on this machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tasks.observe import artifact_key
from tests.servers.loopback import free_port
from tests.servers.prefect import ROOT, LocalPrefect


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_prefect(tmp_path_factory):
    prefect = LocalPrefect(tmp_path_factory.mktemp("prefect-home"), free_port())
    started = prefect.script("up")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield prefect
    finally:
        prefect.script("down")


def test_presets_are_deployed_with_their_parameters(local_prefect):
    for preset in ("judge-led", "hps-led", "hps-only", "curriculum", "group-judge", "smoke", "repaint"):
        deployment = local_prefect.get(f"/deployments/name/train/{preset}")
        assert deployment["parameters"] == {"preset": preset}
        assert deployment["work_pool_name"] == "local-process"
        # Only the remote presets' flow carries the Space hooks; an offline run has no Space to put to sleep.
        flow = "train" if preset in ("smoke", "repaint") else "train_with_space"
        assert deployment["entrypoint"] == f"flows/train.py:{flow}"
    refresh = local_prefect.get("/deployments/name/pool/refresh")
    assert refresh["schedules"][0]["schedule"]["cron"] == "0 3 * * 1"
    assert (
        local_prefect.get("/deployments/name/space-sleep/default")["entrypoint"] == "flows/space_sleep.py:space_sleep"
    )
    # prefect.yaml names no path; `prefect deploy` fills in the checkout it runs in (the script runs in the root).
    assert str(ROOT) not in (ROOT / "prefect.yaml").read_text()
    pull = local_prefect.get("/deployments/name/train/smoke")["pull_steps"]
    assert pull == [{"prefect.deployments.steps.set_working_directory": {"directory": str(ROOT)}}]


def test_no_schedule_is_active_after_deploying_and_the_documented_command_turns_one_on(local_prefect):
    deployments = local_prefect.post("/deployments/filter", {})
    schedules = [(d["name"], s["active"]) for d in deployments for s in d["schedules"]]
    assert ("refresh", False) in schedules and not [name for name, active in schedules if active]
    (schedule,) = json.loads(local_prefect.prefect("deployment", "schedule", "ls", "pool/refresh", "-o", "json"))
    local_prefect.prefect("deployment", "schedule", "resume", "pool/refresh", schedule["id"])
    try:
        assert local_prefect.get("/deployments/name/pool/refresh")["schedules"][0]["active"] is True
    finally:
        local_prefect.prefect("deployment", "schedule", "pause", "pool/refresh", schedule["id"])


def test_judge_limit_exists(local_prefect):
    limit = local_prefect.get("/v2/concurrency_limits/judge")
    assert limit["limit"] >= 1


def smoke_overrides(run_dir: Path) -> dict:
    """A run small enough for this machine: the taught tiny policy, two steps, a checkpoint after each."""
    from tests.models import tiny_sketcher

    return {
        "run_dir": str(run_dir),
        "training.model": str(tiny_sketcher()),
        "training.steps": 2,
        "training.save_steps": 1,
        "training.num_generations": 2,
        "training.gradient_accumulation_steps": 1,
        "training.per_device_batch_size": 2,
        # The tiny policy paints already (taught on the full prompt); the preset's warm start is SmolLM2's.
        "training.prompt": "full",
        "training.warm_start_examples": 0,
        "render.browsers": 1,
    }


def run_artifacts(prefect: LocalPrefect, flow_run_id: str, what: str = "") -> list[dict]:
    """A flow run's artifacts (those whose key ends in `-<what>` when given), oldest first."""
    body = {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}, "key": {"exists_": True}}, "sort": "CREATED_DESC"}
    return [artifact for artifact in prefect.post("/artifacts/filter", body)[::-1] if artifact["key"].endswith(what)]


def run_dirs(base: Path) -> list[Path]:
    """The run directories the flow made under `base`, one per flow run."""
    return sorted(path.parent for path in base.glob("*/flow-run.json"))


def test_two_runs_of_a_deployment_train_in_two_directories_and_log_every_step(local_prefect, tmp_path):
    first = local_prefect.run_deployment("train/smoke", overrides=smoke_overrides(tmp_path))
    assert local_prefect.wait(first) == "COMPLETED", local_prefect.worker_log()
    second = local_prefect.run_deployment("train/smoke", overrides=smoke_overrides(tmp_path))
    assert local_prefect.wait(second) == "COMPLETED", local_prefect.worker_log()
    directories = run_dirs(tmp_path)
    assert len(directories) == 2, "the second run must not continue the first"
    for directory in directories:
        assert len((directory / "curves.csv").read_text().splitlines()) == 1 + 2  # header and two steps
        assert len(list((directory / "rollouts").glob("step-*.parquet"))) == 2
    logs = local_prefect.logs(second, expect_steps=2)
    assert any(line.startswith("starting a new run in") for line in logs)
    steps = [line for line in logs if line.startswith("step ")]
    assert [line.split(" |")[0] for line in steps] == ["step 1/2", "step 2/2"]
    noise = [line for line in logs if "\x1b[" in line or "LOAD_" in line]  # terminal colours, a disassembly
    assert not noise, "\n".join(logs)
    # Each run publishes under keys of its own, named by the preset and the flow run.
    runs = {flow_run: local_prefect.get(f"/flow_runs/{flow_run}")["name"] for flow_run in (first, second)}
    keys = {flow_run: {artifact["key"] for artifact in run_artifacts(local_prefect, flow_run)} for flow_run in runs}
    for flow_run, name in runs.items():
        whats = {"progress", "pool", "steps", "step-rewards", "best-painting"}
        assert keys[flow_run] == {artifact_key(f"smoke-{name}", what) for what in whats}
    assert not keys[first] & keys[second]
    (card,) = run_artifacts(local_prefect, second, "best-painting")[-1:]
    assert "data:image/png;base64," in card["data"] and "file://" not in card["data"]
    (pool,) = run_artifacts(local_prefect, second, "pool")
    assert re.search(r"\d+ references \(\d+ \w+", pool["data"]) and "{" not in pool["data"], pool["data"]
    # No Space in the smoke preset, so no Space hook ran or was announced.
    hooks = [
        line for line in logs + local_prefect.logs(first) if "sleep_scorer_space" in line or "hook" in line.lower()
    ]
    assert not hooks
    worker = (Path(local_prefect.env["PREFECT_HOME"]) / "worker.log").read_text()
    assert "FutureWarning" not in worker and "it/s]" not in worker, worker[-3000:]
    # `logs` says who speaks: the flow's own lines, and each task's, by the task run's name.
    printed = local_prefect.script("logs", runs[second])
    assert printed.returncode == 0, printed.stderr
    lines = [line.split(" | ", 3) for line in printed.stdout.splitlines()]  # when, level, who, message
    said = [(who.strip(), message) for _, _, who, message in lines]
    assert any(who == "flow" and message.startswith("starting a new run in") for who, message in said), said
    steps = [
        message.split(" |")[0]
        for who, message in said
        if who.startswith("grpo_train-") and message.startswith("step ")
    ]
    assert steps == ["step 1/2", "step 2/2"], said
    assert any(who.startswith("load_reference_pool-") and "Finished in state" in message for who, message in said)
    missing = local_prefect.script("logs", "no-such-run")
    assert missing.returncode == 1 and "no flow run is named 'no-such-run'" in missing.stderr


@pytest.mark.browser
def test_a_run_retried_from_the_ui_resumes_and_the_ui_shows_its_steps(local_prefect, tmp_path):
    """Driven as a person would: Retry on the failed run's page, then its artifacts: the step's table and its
    paintings, which the artifact carries itself (the UI cannot open files on the training machine)."""
    from playwright.sync_api import sync_playwright

    from watercolour.run_records.rollout_store import RolloutStore

    flow_run = local_prefect.run_deployment("train/smoke", overrides=smoke_overrides(tmp_path), fail_at_step=1)
    assert local_prefect.wait(flow_run) == "FAILED"
    (run_dir,) = run_dirs(tmp_path)
    assert (run_dir / "checkpoints" / "checkpoint-1").is_dir()
    # The failure names the step the store names, and says once, without the trainer's stack, how to resume.
    assert (run_dir / "rollouts" / "step-00002.parquet").is_file()
    message = local_prefect.get(f"/flow_runs/{flow_run}")["state"]["message"]
    assert "failing on purpose in step 2, once its rollouts were scored" in message, message
    assert "checkpoint-1" in message and f"prefect flow-run retry {flow_run}" in message, message
    assert str(run_dir / "failure.log") in message
    failure_log = (run_dir / "failure.log").read_text()
    assert "Traceback" in failure_log and "InjectedFault" in failure_log
    failed_logs = local_prefect.logs(flow_run, expect_steps=2)
    # The cause is said by Prefect's state reports alone (the task's failure and final state, the flow's final state,
    # the engine's exit); the one traceback is Prefect's engine's own, with no frame of ours: the trainer's stack is
    # only in failure.log.
    said = [line for line in failed_logs if "failing on purpose in step 2" in line]
    assert len(said) <= 4, "\n".join(failed_logs)
    tracebacks = [line for line in failed_logs if "Traceback (most recent call last)" in line]
    assert len(tracebacks) <= 1, "\n".join(failed_logs)
    ours = ("/watercolour/", "/tasks/", "/flows/", "/rewards/")
    assert not [line for line in failed_logs if any(f'File "{ROOT}{folder}' in line for folder in ours)]
    name = local_prefect.get(f"/flow_runs/{flow_run}")["name"]
    keys = f"smoke-{name}"
    ui = local_prefect.api.removesuffix("/api")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{ui}/runs/flow-run/{flow_run}")
        page.get_by_role("button", name="Retry").first.click()
        page.get_by_role("button", name="Retry").last.click()  # the confirmation's button
        assert local_prefect.wait(flow_run) == "COMPLETED", local_prefect.worker_log()

        page.goto(f"{ui}/runs/flow-run/{flow_run}")
        page.get_by_text("Artifacts", exact=True).click()
        page.get_by_text(artifact_key(keys, "best-painting")).first.click()
        sheet = page.locator('img[alt^="the paintings of step"]').first
        sheet.wait_for()
        assert sheet.evaluate("image => image.complete && image.naturalWidth") > 0
        page.goto(f"{ui}/runs/flow-run/{flow_run}")
        page.get_by_text("Artifacts", exact=True).click()
        page.get_by_text(artifact_key(keys, "step-rewards")).first.click()
        page.locator("table th", has_text="reward").first.wait_for()
        assert page.locator("table tbody tr").count() == 2  # one row per rollout of the step
        browser.close()

    states = local_prefect.task_states(flow_run)
    assert any(name.startswith("load_reference_pool") and state == "Cached" for name, state in states.items())
    assert run_dirs(tmp_path) == [run_dir], "the retry trains on in its own directory"
    assert (run_dir / "checkpoints" / "checkpoint-2").is_dir()
    assert any(
        line.startswith("resuming this flow run's training in")
        for line in local_prefect.logs(flow_run, expect_steps=1)
    )
    rows = RolloutStore(run_dir, 2).rows()
    assert sorted((row["step"], row["index"]) for row in rows) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    # The retry replaced what the first attempt published: one artifact of each kind, the latest step's, and the
    # steps in order, each once (step 2 was replayed).
    for what in ("step-rewards", "best-painting", "progress", "pool", "steps"):
        assert len(run_artifacts(local_prefect, flow_run, what)) == 1, what
    (latest,) = run_artifacts(local_prefect, flow_run, "best-painting")
    assert latest["description"].startswith("Step 2:")
    (steps,) = run_artifacts(local_prefect, flow_run, "steps")
    assert [line.split(" |")[0] for line in steps["data"].splitlines()[2:]] == ["| 1", "| 2"], steps["data"]


def test_a_run_of_two_processes_launches_its_ranks_fails_in_one_line_and_resumes_across_them(local_prefect, tmp_path):
    """`training.processes=2` from a deployment run: the training task launches two gloo ranks, a rank failing on
    purpose fails the run with its cause in one line, Retry trains on across both ranks, and the run directory and the
    step artifacts are a one-process run's."""
    from watercolour.run_records.rollout_store import RolloutStore

    overrides = {**smoke_overrides(tmp_path), "training.processes": 2, "render.browsers": 2}
    flow_run = local_prefect.run_deployment("train/smoke", overrides=overrides, fail_at_step=1)
    assert local_prefect.wait(flow_run, timeout_s=900) == "FAILED", local_prefect.worker_log()
    (run_dir,) = run_dirs(tmp_path)
    message = local_prefect.get(f"/flow_runs/{flow_run}")["state"]["message"]
    # Both ranks fail on purpose; whichever the launcher saw first names itself.
    assert re.search(r"rank [01] failed: InjectedFault: fail_at_step=1: failing on purpose in step 2", message), (
        message
    )
    assert "checkpoint-1" in message and str(run_dir / "launch.log") in message
    local_prefect.prefect("flow-run", "retry", flow_run)
    assert local_prefect.wait(flow_run, timeout_s=900) == "COMPLETED", local_prefect.worker_log()
    rows = RolloutStore(run_dir, 2).rows()
    # Two ranks, one group of two each a step: two groups a step, every rollout once.
    assert sorted((row["step"], row["group"], row["index"]) for row in rows) == [
        (step, group, index) for step in (1, 2) for group in (0, 1) for index in (0, 1)
    ]
    assert len((run_dir / "curves.csv").read_text().splitlines()) == 1 + 2
    assert (run_dir / "checkpoints" / "checkpoint-2" / "rng_state_1.pth").is_file()
    logs = local_prefect.logs(flow_run, expect_steps=2)
    assert any(line.startswith("launching 2 processes") for line in logs), logs
    assert [line.split(" |")[0] for line in logs if line.startswith("step ")][-1] == "step 2/2"
    (steps,) = run_artifacts(local_prefect, flow_run, "steps")
    assert [line.split(" |")[0] for line in steps["data"].splitlines()[2:]] == ["| 1", "| 2"], steps["data"]
    (latest,) = run_artifacts(local_prefect, flow_run, "best-painting")
    assert latest["description"].startswith("Step 2:") and "data:image/png;base64," in latest["data"]
