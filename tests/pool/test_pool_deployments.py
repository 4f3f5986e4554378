"""The `pool` deployments on a real Prefect server and worker on 127.0.0.1, with loopback writer, critic and Hub.

`pool/build` runs to the rating step and suspends (its process exits: no worker is held while a person rates);
the rating page, driven in Chromium, records the ratings (a reload mid-way resumes where it was) and resumes the
run, which packs, calibrates and publishes a revision. A second run with one writer endpoint dead is resumed
from the Prefect UI's Resume form (its typed input), and completes with dead letters for that endpoint. A run
left waiting fails clearly and keeps every rating. The scheduled `pool/refresh` queues new candidates for the
thin subjects of the latest revision.

One server for the module (each start costs 15+ s on this machine), and the four runs start together: the worker
runs them side by side, so the module waits for the slowest once instead of for each in turn.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ground.reference_pool import BUNDLED_POOL
from tests.servers.generator import critic_server, writer_server
from tests.servers.loopback import free_port
from tests.servers.prefect import ROOT, LocalPrefect
from watercolour.rehearsal.hub import HubLoopback


pytestmark = [pytest.mark.slow, pytest.mark.browser]
TOKEN = "hf_pool_token"


@pytest.fixture(scope="module")
def stand_ins():
    with writer_server() as writer, critic_server() as critic, HubLoopback(token=TOKEN) as hub:
        yield writer, critic, hub


@pytest.fixture(scope="module")
def prefect(tmp_path_factory, stand_ins):
    _, _, hub = stand_ins
    local = LocalPrefect(tmp_path_factory.mktemp("prefect-home"), free_port())
    # The worker's flow runs publish to the loopback Hub: HF_ENDPOINT names it, and the Hub is not offline for them.
    local.env.update({"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": TOKEN, "HF_HUB_OFFLINE": "0"})
    # A resumed run is scheduled again; the worker's default 10 s between polls would be most of the wait.
    local.env["PREFECT_WORKER_QUERY_SECONDS"] = "2"
    started = local.script("up")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield local
    finally:
        local.script("down")


def generate(writer_urls: list[str], models: list[str], critic=None, per_model: int = 2) -> dict:
    settings = {"endpoints": writer_urls, "models": models, "per_model": per_model, "timeout_s": 30}
    if critic is not None:
        settings.update({"rounds": 1, "critic_url": critic.url + "/v1", "critic_model": "org/critic"})
    return settings


def wait_for_state(prefect: LocalPrefect, flow_run_id: str, name: str, timeout_s: float = 180) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = prefect.get(f"/flow_runs/{flow_run_id}")
        if run["state"]["name"] == name:
            return run
        assert run["state"]["type"] not in ("FAILED", "CRASHED", "COMPLETED"), (run["state"], prefect.worker_log())
        time.sleep(1)
    raise TimeoutError(f"flow run {flow_run_id} never reached {name}: {prefect.worker_log()}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def suspended_without_a_process(prefect: LocalPrefect, flow_run_id: str) -> None:
    run = wait_for_state(prefect, flow_run_id, "Suspended")
    pid = int(run["infrastructure_pid"].rsplit(":", 1)[-1])
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not alive(pid), "a suspended run's process must exit, freeing the worker"


def rating_page(prefect: LocalPrefect, folder: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    page = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "watercolour"), "pool", "rate", str(folder), "--port", str(port), "--no-open"],
        env={**prefect.env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "state", timeout=2).raise_for_status()
            return page, url
        except httpx.HTTPError:
            assert page.poll() is None, page.stdout.read() if page.stdout else ""
            time.sleep(0.3)
    raise TimeoutError("the rating page did not start")


def artifact_data(prefect: LocalPrefect, flow_run_id: str, key: str) -> list:
    """The data of a flow run's latest artifact under `key` (the runs share the keys: each key's versions)."""
    artifacts = {"key": {"any_": [key]}, "flow_run_id": {"any_": [flow_run_id]}}
    found = prefect.post("/artifacts/filter", {"artifacts": artifacts, "sort": "CREATED_DESC"})
    assert found, f"no artifact {key}"
    return json.loads(found[0]["data"]) if found[0]["type"] == "table" else found[0]["data"]


def rated_candidates(folder: Path) -> Path:
    """A generated folder of two candidates, one of them rated."""
    from watercolour.pool.candidates import Candidate, Ratings, append_candidate, write_ratings

    folder.mkdir(parents=True)
    for name in ("red_poppy", "orange_poppy"):
        for suffix in (".js", ".png"):
            (folder / f"{name}{suffix}").write_bytes((BUNDLED_POOL / f"{name}{suffix}").read_bytes())
        made = Candidate(
            id=name, model="org/m", endpoint="http://x", subject="a red poppy", round=0, temperature=0.6, passed=True,
            js=f"{name}.js", png=f"{name}.png",
        )  # fmt: skip
        append_candidate(folder, made)
    (folder / "generated.json").write_text(json.dumps({"candidates": 2, "passed": 2, "rounds": 0, "dead_letters": []}))
    ratings = Ratings()
    ratings.rate("red_poppy", "love")
    write_ratings(folder, ratings)
    return folder


@dataclass
class Runs:
    started: dict[str, tuple[str, Path]]  # name -> (flow run id, its pool root)
    dead_endpoint: str


@pytest.fixture(scope="module")
def runs(prefect, stand_ins, tmp_path_factory):
    """The three runs, started at once."""
    writer, critic, hub = stand_ins
    base = tmp_path_factory.mktemp("pool-runs")
    seed = base / "seed"
    seed.mkdir()
    for name in ("red_poppy.js", "red_poppy.png"):
        (seed / name).write_bytes((BUNDLED_POOL / name).read_bytes())
    dead = f"http://127.0.0.1:{free_port()}/v1"
    waiting = rated_candidates(base / "waiting" / "queued")
    started = {
        "build": prefect.run_deployment(
            "pool/build",
            generate=generate([writer.url + "/v1"], ["org/writer"], critic),
            pool_root=str(base / "build"),
            calibrate_k=2,
            hub={"repo_id": "me/pool", "endpoint": hub.endpoint, "private": False},
        ),
        "dead": prefect.run_deployment(
            "pool/build",
            generate=generate([writer.url + "/v1", dead], ["org/alive", "org/dead"]),
            pool_root=str(base / "dead"),
            calibrate_k=1,
        ),
        "refresh": prefect.run_deployment(
            "pool/refresh",
            generate=generate([writer.url + "/v1"], ["org/writer"]),
            pool_root=str(base / "refresh"),
            seed_dir=str(seed),
            report=str(base / "report.json"),
            max_subjects=2,
        ),
        # A queued folder (as a refresh leaves one), one rating already made, and a second of patience.
        "waiting": prefect.run_deployment(
            "pool/build", candidates=str(waiting), pool_root=str(base / "waiting"), rating_timeout_s=1
        ),
    }
    return Runs({name: (flow_run, base / name) for name, flow_run in started.items()}, dead)


def test_build_waits_for_ratings_in_the_page_then_packs_calibrates_and_publishes(prefect, stand_ins, runs):
    from playwright.sync_api import sync_playwright

    _, _, hub = stand_ins
    flow_run, root = runs.started["build"]
    suspended_without_a_process(prefect, flow_run)
    (folder,) = (root / "candidates").iterdir()
    assert json.loads((folder / "awaiting.json").read_text())["flow_run_id"] == flow_run
    counts = {row["stage"]: row["count"] for row in artifact_data(prefect, flow_run, "pool-counts")}
    table = artifact_data(prefect, flow_run, "pool-candidates")
    assert counts == {"drafted": 2, "revised": 2, "passed the gate": 4, "dead letters": 0}, table

    page_process, url = rating_page(prefect, folder)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(url)
            page.get_by_text("waits for these ratings").wait_for()
            progress = "document.querySelector('#progress').textContent === '{} of 4 rated'"
            page.wait_for_function(progress.format(0))
            for count, key in enumerate("12", start=1):
                page.keyboard.press(key)
                page.wait_for_function(progress.format(count))
            page.reload()  # mid-way: the saved ratings come back and rating goes on from the next candidate
            page.wait_for_function(progress.format(2))
            for count, key in enumerate("14", start=3):
                page.keyboard.press(key)
                page.wait_for_function(progress.format(count))
            page.keyboard.press("Enter")
            page.locator("#flow").wait_for(state="hidden")
            browser.close()
    finally:
        page_process.terminate()
        page_process.wait(timeout=10)

    assert prefect.wait(flow_run, timeout_s=180) == "COMPLETED", prefect.worker_log()
    revision = (root / "LATEST").read_text().strip()
    pool_dir = root / "revisions" / revision
    assert (pool_dir / "REVISION").read_text().strip() == revision
    assert len(json.loads((pool_dir / "pool.json").read_text())["references"]) == 3  # love, okay, love; nope dropped
    calibration = json.loads((pool_dir / "calibration.json").read_text())
    assert {row["name"] for row in calibration["references"]} == {
        r["name"] for r in json.loads((pool_dir / "pool.json").read_text())["references"]
    }
    assert hub.repos["me/pool"]["REVISION"].decode().strip() == revision
    assert {row["name"] for row in artifact_data(prefect, flow_run, "pool-calibration")} == {
        row["name"] for row in calibration["references"]
    }
    assert "gallery/index.html" in artifact_data(prefect, flow_run, "pool-gallery")
    assert not (folder / "awaiting.json").exists()


def test_a_dead_generator_endpoint_becomes_dead_letters_and_the_ui_resume_form_resumes(prefect, runs):
    from playwright.sync_api import sync_playwright

    flow_run, root = runs.started["dead"]
    dead = runs.dead_endpoint
    suspended_without_a_process(prefect, flow_run)
    (folder,) = (root / "candidates").iterdir()
    letters = artifact_data(prefect, flow_run, "pool-dead-letters")
    assert {row["endpoint"] for row in letters} == {dead} and len(letters) == 2
    alive_ids = [json.loads(line)["id"] for line in (folder / "candidates.jsonl").read_text().splitlines()]
    assert len(alive_ids) == 2
    # The UI builds its Resume form from the schema the run stored for its typed input.
    keyset = prefect.get(f"/flow_runs/{flow_run}")["state"]["state_details"]["run_input_keyset"]
    schema = json.dumps(prefect.get(f"/flow_runs/{flow_run}/input/{keyset['schema']}"))
    assert "RatingsSubmitted" in schema and "tiers" in schema and "love" in schema
    # The UI's Resume form, filled in as a person would: the typed input, here rating both candidates.
    tiers = {alive_ids[0]: "love", alive_ids[1]: "meh"}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{prefect.api.removesuffix('/api')}/runs/flow-run/{flow_run}")
        page.get_by_role("button", name="Resume").first.click()
        page.get_by_text("Tiers (Optional)").wait_for()
        page.locator("textarea.p-code-input__textarea").fill(json.dumps(tiers))
        page.get_by_role("button", name="Submit").click()
        assert prefect.wait(flow_run, timeout_s=180) == "COMPLETED", prefect.worker_log()
        browser.close()
    assert json.loads((folder / "ratings.json").read_text())["tiers"] == tiers
    generated = json.loads((folder / "generated.json").read_text())
    assert [letter["endpoint"] for letter in generated["dead_letters"]] == [dead, dead]
    assert (folder / "dead_letters.jsonl").is_file()


def test_the_scheduled_refresh_queues_candidates_for_thin_subjects(prefect, runs):
    refresh = prefect.get("/deployments/name/pool/refresh")
    assert refresh["schedules"][0]["schedule"]["cron"] == "0 3 * * 1"
    assert prefect.get("/deployments/name/pool/build")["entrypoint"] == "flows/pool_build.py:build_pool"
    flow_run, root = runs.started["refresh"]
    assert prefect.wait(flow_run, timeout_s=180) == "COMPLETED", prefect.worker_log()
    (folder,) = (root / "candidates").iterdir()
    candidates = [json.loads(line) for line in (folder / "candidates.jsonl").read_text().splitlines()]
    plan = artifact_data(prefect, flow_run, "pool-refresh-plan")
    assert sorted(c["subject"] for c in candidates) == sorted(row["subject"] for row in plan) and len(plan) == 2
    assert not (folder / "ratings.json").exists()  # awaiting rating
    assert json.loads((root.parent / "report.json").read_text())[0]["sketch"] == "red_poppy"


def test_a_run_left_waiting_fails_clearly_and_keeps_every_rating(prefect, runs):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from watercolour.pool.rate import NotWaiting, RatingDesk

    flow_run, root = runs.started["waiting"]
    folder = root / "queued"
    before = (folder / "ratings.json").read_text()
    assert prefect.wait(flow_run, timeout_s=180) == "FAILED"
    assert "paused and never resumed" in prefect.get(f"/flow_runs/{flow_run}")["state"]["message"]
    assert (folder / "ratings.json").read_text() == before
    # The page still finds the run named in the folder, and says where the ratings are and how to pack them.
    with temporary_settings({PREFECT_API_URL: prefect.api}), pytest.raises(NotWaiting, match="candidates="):
        RatingDesk(folder).finish()
    assert (folder / "ratings.json").read_text() == before
