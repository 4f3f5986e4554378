"""Flows under one session-scoped Prefect test harness, against real loopback services: the hub loopback, the
scorer Space's own app with its stand-in model under uvicorn, headless Chromium, and a local Dask cluster.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.task_runners import ThreadPoolTaskRunner

from deployments.presets import load_config
from rewards.scoring.composite import CompositeReward
from rewards.scoring.engine_thread import close_engine_thread
from tasks.fanout import FannedScorer, FanOutSettings, StepState, make_task_runner
from tasks.observe import StepReporter
from tests.servers.scorer_space import serve_scorer_space
from watercolour.run_records.curves import CurvesFile


ROOT = Path(__file__).resolve().parents[2]
SPACE = "painter/watercolour-hpsv3"


@pytest.fixture
def scorer():
    """The scorer Space's app with its stand-in model, under uvicorn; `scorer.kill()` takes it down mid-test."""
    with serve_scorer_space("standin") as running:
        yield running


def space_overrides(hub, scorer) -> dict:
    """The scorer Space as the run configuration names it: no flow parameter, the loopback Hub and scorer."""
    return {
        "space.repo_id": SPACE,
        "space.endpoint": hub.endpoint,
        "space.token_env": "WATERCOLOUR_TEST_HUB_TOKEN",
        "space.poll_s": 0.05,
        "space.idle_s": 600,
        "aesthetic.url": scorer.url,
    }


def completion(sketch: str) -> list[dict]:
    return [{"role": "assistant", "content": f"```javascript\n{sketch}\n```"}]


def artifacts(key: str) -> list:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))


def flow_run_name(state) -> str:
    with get_client(sync_client=True) as client:
        return client.read_flow_run(state.state_details.flow_run_id).name


def test_space_sleep_flow_pauses_once_and_is_idempotent(prefect_server, hub):
    from flows.space_sleep import space_sleep

    hub.add_space(SPACE, stage="RUNNING")
    options = dict(endpoint=hub.endpoint, token_env="WATERCOLOUR_TEST_HUB_TOKEN")
    assert space_sleep(SPACE, **options) == "paused"
    assert space_sleep(SPACE, **options) == "already paused"
    assert len(hub.calls_to("/pause")) == 1


@pytest.mark.browser
@pytest.mark.slow
def test_a_dead_scorer_turns_rollouts_into_dead_letters_and_the_step_goes_on(
    prefect_server, scorer, tmp_path, flower_sketch
):
    config = load_config(
        "hps-only",
        {"aesthetic.url": scorer.url, "aesthetic.attempts": 2, "aesthetic.backoff_s": 0.1, "run_dir": str(tmp_path)},
    )
    config.render.browsers = 1
    batch = [completion(flower_sketch), completion(flower_sketch.replace("#f28c6a", "#6a8cf2")), completion("no")]

    @flow
    def two_steps() -> tuple[list, list]:
        with ThreadPoolTaskRunner(max_workers=3) as runner:
            fanned = FannedScorer(config, tmp_path, runner=runner, retries=1)
            reporter = StepReporter(config.name, tmp_path, 2)
            reward = CompositeReward(fanned, reporter)
            first = asyncio.run(reward(["p"] * 3, batch, trainer_state=StepState(0)))
            scorer.kill()
            second = asyncio.run(
                reward(
                    ["p"] * 3,
                    batch[:2] + [completion(flower_sketch.replace("#b0305a", "#30b05a"))],
                    trainer_state=StepState(1),
                )
            )
            reporter.close()  # the steps' artifacts are published after the reward's call returns
        return first, second

    try:
        first, second = two_steps()
    finally:
        close_engine_thread()
    assert first[0] is not None and first[1] is not None and first[2] == 0.0
    # Step 2: the two cached scores still count; the new sketch needed the dead scorer, so its reward is None.
    assert second[:2] == first[:2] and second[2] is None
    letters = (tmp_path / "dead_letters.jsonl").read_text().splitlines()
    assert len(letters) == 1 and '"stage":"aesthetic"' in letters[0]
    # One artifact of each kind, updated in place, so the UI lists them in no random order: the latest step's.
    (rewards,) = artifacts("hps-only-step-rewards")
    assert rewards.description.startswith("Step 2: rewards.") and "`length`: the length ramp" in rewards.description
    assert artifacts("hps-only-dead-letters")[0].description.startswith("Step 2:")
    # The step's card carries its paintings inside itself: the UI cannot open files on the training machine.
    (card,) = [artifact.data for artifact in artifacts("hps-only-best-painting")]
    assert card.startswith("# Step 2 of 2") and "](data:image/png;base64," in card and "file://" not in card
    (steps,) = artifacts("hps-only-steps")
    assert [line.split(" |")[0] for line in steps.data.splitlines()[2:]] == ["| 1", "| 2"], steps.data


@pytest.mark.browser
@pytest.mark.slow
def test_fan_out_runs_on_a_local_dask_cluster_with_a_browser_pool_per_worker(prefect_server, tmp_path, flower_sketch):
    config = load_config("offline", {"weights.judge": 0.0, "weights.aesthetic": 0.9, "run_dir": str(tmp_path)})
    config.render.browsers = 1
    sketches = [flower_sketch.replace("#f28c6a", colour) for colour in ("#f28c6a", "#6a8cf2", "#8cf26a")]
    batch = [completion(s) for s in sketches] + [completion("I cannot paint.")]

    @flow
    def one_step() -> tuple[list, dict]:
        with make_task_runner(FanOutSettings(engine="dask", dask_workers=2)) as runner:
            fanned = CompositeReward(FannedScorer(config, tmp_path, runner=runner))
            rewards = asyncio.run(fanned(["p"] * 4, batch, trainer_state=StepState(0)))
            engines = runner.client.run(
                lambda: __import__("rewards.scoring.engine_thread").scoring.engine_thread.engine_thread_running()
            )
        return rewards, engines

    rewards, engines = one_step()
    assert all(r is not None and r > 0.05 for r in rewards[:3]) and rewards[3] == 0.0
    assert len(engines) == 2


@pytest.mark.browser
@pytest.mark.slow
def test_pool_refresh_reports_moved_pixels_and_verdicts(prefect_server, tmp_path):
    from flows.pool import refresh_pool
    from ground.reference_pool import BUNDLED_POOL

    seed = tmp_path / "seed"
    seed.mkdir()
    for name in ("blue_anemone", "orange_poppy"):
        shutil.copy(BUNDLED_POOL / f"{name}.js", seed)
        shutil.copy(BUNDLED_POOL / f"{name}.png", seed)
    # A changed sketch against its old picture: the refresh must see the pixels move.
    poppy = seed / "orange_poppy.js"
    poppy.write_text(poppy.read_text().replace('"#ee8a28"', '"#2040c0"').replace('"#f39a2e"', '"#2040c0"'))
    rows = {row["sketch"]: row for row in refresh_pool(str(seed), str(tmp_path / "report.json"))["drift"]}
    assert rows["blue_anemone"]["passed"] and rows["blue_anemone"]["moved_pixels"] < 0.01
    assert rows["orange_poppy"]["moved_pixels"] > 0.01
    assert (tmp_path / "report.json").exists() and artifacts("pool-refresh")


def test_a_failing_train_run_still_puts_its_space_to_sleep(prefect_server, hub, scorer, tmp_path):
    from flows.train import train_with_space

    hub.add_space(SPACE, stage="PAUSED")
    # The scorer wakes and loads, then the run fails on a pool that is not there.
    overrides = {**space_overrides(hub, scorer), "run_dir": str(tmp_path), "pool_dir": str(tmp_path / "no-pool")}
    state = train_with_space("hps-only", overrides, return_state=True)
    assert state.is_failed()
    assert [t[1:] for t in hub.transitions] == [
        ("PAUSED", "BUILDING"),
        ("BUILDING", "APP_STARTING"),
        ("APP_STARTING", "RUNNING"),
        ("RUNNING", "PAUSED"),
    ]
    assert hub.spaces[SPACE].sleep_time == 600  # the server-side backstop, set before anything else
    # The finally paused it; the on_failure hook found it paused and left it so.
    assert len(hub.calls_to("/pause")) == 1 and len(hub.calls_to("/runtime")) >= 5


@pytest.mark.browser
@pytest.mark.slow
def test_a_scorer_killed_mid_run_gives_dead_letters_and_the_space_still_sleeps_at_the_end(
    prefect_server, hub, scorer, tmp_path, caplog
):
    """The whole train flow: the Space wakes, the scorer dies once training has started, every admitted rollout
    becomes a dead letter with a None reward, the run still completes, and the Space is paused at the end."""
    import json
    import threading

    from flows.train import train
    from tests.models import tiny_sketcher
    from watercolour.run_records.rollout_store import RolloutStore

    hub.add_space(SPACE, stage="PAUSED")
    run_dir = tmp_path / "run"
    overrides = {
        **space_overrides(hub, scorer),
        "aesthetic.attempts": 2,
        "aesthetic.backoff_s": 0.05,
        "aesthetic.timeout_s": 5,
        "training.model": str(tiny_sketcher()),
        "training.steps": 2,
        "training.save_steps": 2,
        "training.num_generations": 4,
        "training.gradient_accumulation_steps": 1,
        "training.per_device_batch_size": 4,
        "render.browsers": 1,
    }

    def kill_scorer_once_training_starts() -> None:
        # config.yaml is written by the trainer after the health checks passed against the live scorer.
        deadline = time.monotonic() + 300
        while not (run_dir / "config.yaml").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        scorer.kill()

    killer = threading.Thread(target=kill_scorer_once_training_starts, daemon=True)
    killer.start()
    try:
        state = train("hps-only", overrides, run_dir=str(run_dir), return_state=True)
    finally:
        close_engine_thread()
    killer.join(timeout=5)
    assert state.is_completed(), state.message

    rows = RolloutStore(run_dir, num_generations=4).rows()
    assert sorted({row["step"] for row in rows}) == [1, 2] and len(rows) == 8
    admitted = [row for row in rows if not row["violations"]]
    refused = [row for row in rows if row["violations"]]
    # Every admitted rollout needed the dead scorer: None and a dead letter, never a zero. Refused ones are 0.0.
    assert admitted and all(row["reward"] is None and row["dead_letter"] for row in admitted)
    assert all(row["reward"] == 0.0 for row in refused)
    letters = [json.loads(line) for line in (run_dir / "dead_letters.jsonl").read_text().splitlines()]
    assert len(letters) >= len(admitted) and {letter["stage"] for letter in letters} <= {"aesthetic", "fan-out"}
    # TRL warns of such a row with its prompt and completion whole, once a step; the dead letters already say it.
    trl_rows = [record for record in caplog.records if "All reward functions returned None" in record.getMessage()]
    assert not trl_rows, trl_rows[0].getMessage()[:300]
    # Woken at the start, paused at the end, with the server-side backstop set first.
    assert hub.transitions[0][1:] == ("PAUSED", "BUILDING")
    assert hub.transitions[-1][1:] == ("RUNNING", "PAUSED")
    assert hub.spaces[SPACE].sleep_time == 600


def test_the_judge_audit_flow_publishes_its_report_as_an_artifact(prefect_server, tmp_path):
    from flows.judge import audit
    from watercolour.judge_trust.judge_audit import AuditSettings

    result = audit("offline", out_dir=str(tmp_path), settings=AuditSettings(pairs=6, triads=4, challengers=1))
    assert result["backend"].startswith("offline-pool-similarity") and result["flags"] == []
    (artifact,) = artifacts("judge-audit")[-1:]
    assert "| self-consistency |" in artifact.data and "planted-always-a" in artifact.data
    assert (tmp_path / "audit.md").read_text().strip() == artifact.data.strip()


@pytest.mark.browser
@pytest.mark.slow
def test_a_judge_led_run_wakes_and_sleeps_the_space_its_configuration_names(prefect_server, hub, scorer, tmp_path):
    """No `space` parameter: the run configuration names the Space, and the flow wakes it, sets its backstop,
    trains against the loopback scorer and an OpenAI-compatible loopback judge, and pauses it at the end. Its
    rollouts are scored as Prefect tasks, and with early scoring on, every one was asked for ahead, during
    generation."""
    from flows.train import train_with_space
    from tests.models import tiny_sketcher
    from tests.servers.openai_compat import openai_compat_server, verdict

    hub.add_space(SPACE, stage="PAUSED")
    with openai_compat_server(lambda a, b: verdict("A")) as judge:
        overrides = {
            **space_overrides(hub, scorer),
            "judge.base_url": judge.url + "/v1",
            "judge.token_env": "WATERCOLOUR_TEST_HUB_TOKEN",
            "training.model": str(tiny_sketcher()),
            "training.steps": 1,
            "training.num_generations": 2,
            "training.gradient_accumulation_steps": 1,
            "training.per_device_batch_size": 2,
            "training.max_completion_length": 8,
            "training.generation": "fast",  # the fast path, early scoring among its levers
            "training.save_steps": 1,
            "render.browsers": 1,
            "run_dir": str(tmp_path),
        }
        try:
            state = train_with_space("judge-led", overrides, return_state=True)
            # The same run again once every step is trained (as a retry after a publish that failed): nothing is left
            # to score, so the Space, whose start takes minutes, is not woken.
            woken = len(hub.transitions)
            again = train_with_space(
                "judge-led", overrides, run_dir=state.result()["run_dir"], continue_run=True, return_state=True
            )
        finally:
            close_engine_thread()
    assert state.is_completed(), state.message
    result = state.result()
    assert Path(result["run_dir"]).parent == tmp_path and (Path(result["run_dir"]) / "curves.csv").is_file()
    (step,) = CurvesFile(Path(result["run_dir"])).read()
    assert float(step["prefetched"]) == 1.0, "early scoring reached the Prefect route: every rollout asked ahead"
    assert result["services"]["scorer"].startswith("scorer loaded (Space PAUSED")
    assert result["services"]["renderer"].startswith("renderer ready ("), "the renderer is checked before the run"
    assert hub.transitions[0][1:] == ("PAUSED", "BUILDING") and hub.transitions[-1][1:] == ("RUNNING", "PAUSED")
    assert hub.spaces[SPACE].sleep_time == 600 and len(hub.calls_to("/pause")) == 1
    # The run names the pool revision it trained against: in its configuration and in its artifact.
    from ground.reference_pool import pool_revision
    from ground.run_config import RunConfig

    assert result["pool"]["revision"] == pool_revision(None)
    assert RunConfig.load(Path(result["run_dir"]) / "config.yaml").pool_revision == pool_revision(None)
    # The flow run's own key, and a sentence rather than a dict of tiers.
    (card,) = artifacts(f"judge-led-{flow_run_name(state)}-pool")
    assert pool_revision(None) in card.data and "{" not in card.data
    assert again.is_completed(), again.message
    assert again.result()["checkpoint"] == "checkpoint-1" and again.result()["resumed_from"] == "checkpoint-1"
    assert again.result()["services"]["scorer"].startswith("not called: every step was trained")
    assert "renderer" not in again.result()["services"], "nothing is left to render"
    assert len(hub.transitions) == woken and hub.spaces[SPACE].stage == "PAUSED"


def test_step_artifacts_publish_after_the_reward_call_in_step_order_and_a_failed_one_is_logged(
    prefect_server, tmp_path, caplog
):
    import threading

    from ground.records import RewardParts

    release = threading.Event()
    published: list[int] = []

    class HeldReporter(StepReporter):
        """The real reporter, its publishing held until the test lets it go; step 2's fails as a dead server would."""

        def report(self, step: int, parts: list) -> None:
            release.wait(timeout=60)
            if step == 2:
                raise ConnectionError("the server went away\nand said more")
            super().report(step, parts)
            published.append(step)

    @flow
    def three_steps() -> list[int]:
        reporter = HeldReporter("held", tmp_path, 3)
        parts = [RewardParts(reward=0.5, weights={"aesthetic": 1.0})]
        for step in range(3):
            reporter(["p"], ["c"], parts, {"trainer_state": StepState(step)})
        before = list(published)  # every call has returned, none of the steps is published yet
        release.set()
        reporter.close()
        return before

    with caplog.at_level("WARNING"):
        assert three_steps() == []
    assert published == [1, 3], "in step order, and the step after a failed publish is published"
    (steps,) = artifacts("held-steps")
    assert steps.description == "Steps 1 to 3 of 3, in order"
    warnings = [
        record.getMessage() for record in caplog.records if "artifacts were not published" in record.getMessage()
    ]
    assert warnings == [
        "step 2's artifacts were not published (ConnectionError: the server went away); the run goes on"
    ]
