"""Space lifecycle against a loopback Hub: the real huggingface_hub client, real HTTP, recorded transitions."""

from __future__ import annotations

import logging

import pytest

from ground.run_config import SpaceSettings
from tests.servers.hub import HUB_TOKEN
from watercolour.operations.space_control import (
    SpaceUnavailable,
    set_sleep_backstop,
    sleep_space,
    wait_until_loaded,
    wake_space,
)
from watercolour.rehearsal.hub import HubLoopback


SPACE = "painter/watercolour-hpsv3"


def settings(hub: HubLoopback, **changes) -> SpaceSettings:
    base = dict(repo_id=SPACE, endpoint=hub.endpoint, token_env="WATERCOLOUR_TEST_HUB_TOKEN", poll_s=0.05)
    return SpaceSettings(**(base | changes))


def test_wake_restarts_a_paused_space_and_waits_for_running(hub):
    hub.add_space(SPACE, stage="PAUSED")
    assert wake_space(settings(hub)) == "PAUSED"
    assert hub.transitions == [
        (SPACE, "PAUSED", "BUILDING"),
        (SPACE, "BUILDING", "APP_STARTING"),
        (SPACE, "APP_STARTING", "RUNNING"),
    ]
    assert len(hub.calls_to("/restart")) == 1
    assert all(call.authorized for call in hub.calls if call.path.startswith("/api/"))


def test_wake_leaves_a_running_space_alone(hub):
    hub.add_space(SPACE, stage="RUNNING")
    assert wake_space(settings(hub)) == "RUNNING"
    assert hub.calls_to("/restart") == [] and hub.transitions == []


def test_wake_restarts_a_sleeping_space(hub):
    hub.add_space(SPACE, stage="SLEEPING")
    wake_space(settings(hub))
    assert hub.spaces[SPACE].stage == "RUNNING"


def test_wake_names_a_broken_build(hub):
    hub.add_space(SPACE, stage="BUILD_ERROR")
    with pytest.raises(SpaceUnavailable, match="BUILD_ERROR, not RUNNING"):
        wake_space(settings(hub))


def test_health_poll_waits_until_the_model_is_loaded_not_just_running(hub):
    hub.add_space(SPACE, stage="RUNNING", load_polls=3)
    wait_until_loaded(hub.app_url(SPACE) + "/health", timeout_s=10, poll_s=0.01)
    assert len(hub.calls_to("/health")) == 4


def test_health_poll_gives_up_with_the_last_answer(hub):
    hub.add_space(SPACE, stage="PAUSED")
    with pytest.raises(SpaceUnavailable, match="not loaded after 0 s \\(HTTP 503\\)"):
        wait_until_loaded(hub.app_url(SPACE) + "/health", timeout_s=0.1, poll_s=0.02)


def test_pause_is_idempotent(hub):
    hub.add_space(SPACE, stage="RUNNING")
    assert sleep_space(settings(hub), "pause") == "paused"
    assert sleep_space(settings(hub), "pause") == "already paused"
    assert len(hub.calls_to("/pause")) == 1
    assert hub.spaces[SPACE].stage == "PAUSED"


def test_sleep_mode_sets_the_idle_timeout_once(hub):
    hub.add_space(SPACE, stage="RUNNING")
    assert sleep_space(settings(hub, idle_s=300), "sleep") == "sleeps after 300 s idle"
    assert sleep_space(settings(hub, idle_s=300), "sleep") == "already set to sleep"
    assert len(hub.calls_to("/sleeptime")) == 1


def test_backstop_sets_the_server_side_sleep_time(hub):
    hub.add_space(SPACE, stage="RUNNING")
    assert set_sleep_backstop(settings(hub, idle_s=600)) == 600
    assert hub.spaces[SPACE].sleep_time == 600


def test_missing_token_names_the_variable_and_makes_no_call(hub, monkeypatch):
    monkeypatch.delenv("WATERCOLOUR_TEST_HUB_TOKEN")
    hub.add_space(SPACE)
    with pytest.raises(SpaceUnavailable, match=r"\$WATERCOLOUR_TEST_HUB_TOKEN is not set"):
        wake_space(settings(hub))
    assert hub.calls == []


def test_the_token_never_reaches_the_logs(hub, caplog):
    hub.add_space(SPACE, stage="PAUSED")
    with caplog.at_level(logging.DEBUG):
        wake_space(settings(hub))
        sleep_space(settings(hub), "pause")
    assert HUB_TOKEN not in caplog.text


def test_cli_wakes_and_pauses_with_the_same_code(hub, capsys):
    from watercolour.cli import main

    hub.add_space(SPACE, stage="PAUSED")
    options = ["--endpoint", hub.endpoint, "--token-env", "WATERCOLOUR_TEST_HUB_TOKEN"]
    assert main(["space", "wake", SPACE, *options, "--health-url", hub.app_url(SPACE) + "/health"]) == 0
    assert main(["space", "pause", SPACE, *options]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{SPACE}: paused"


def test_publish_uploads_the_adapter_and_only_rollouts_and_curves(hub, tmp_path):
    from watercolour.operations.publish import PublishSettings, publish

    run = tmp_path / "run"
    for name, data in {
        "adapter/adapter_config.json": b"{}",
        "adapter/adapter_model.safetensors": b"weights",
        "rollouts/step-00001.parquet": b"rows",
        "rollouts/png/1/0_0.png": b"png",
        "curves.csv": b"step\n1\n",
        "config.yaml": b"not published",
    }.items():
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_bytes(data)
    settings = PublishSettings(
        model_repo="painter/lora",
        dataset_repo="painter/rollouts",
        endpoint=hub.endpoint,
        token_env="WATERCOLOUR_TEST_HUB_TOKEN",
    )
    urls = publish(run, settings)
    assert set(urls) == {"adapter", "rollouts"}
    assert hub.repos["painter/lora"] == {"adapter_config.json": b"{}", "adapter_model.safetensors": b"weights"}
    assert sorted(hub.repos["painter/rollouts"]) == [
        "curves.csv",
        "rollouts/png/1/0_0.png",
        "rollouts/step-00001.parquet",
    ]
