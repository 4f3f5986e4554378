"""`watercolour rehearse` as a person runs it: the judge-led preset's trainer at a tiny published-style shape with
random weights, against stand-ins of its scorer Space, its Hub and its judge; each step's parts, the peak memory and
the projected run printed; nothing but the adapter and the optimizer saved."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from deployments.presets import load_config
from ground.run_config import RunConfig
from rewards.aesthetic import aesthetic_settings
from watercolour.rehearsal.shapes import SHAPES, UnknownShape, shape_name, shape_of_model
from watercolour.run_records.rollout_store import RolloutStore


def watercolour_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "watercolour.cli", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_a_preset_model_names_its_published_shape_and_an_unknown_one_is_refused() -> None:
    assert shape_of_model("Qwen/Qwen3.5-35B-A3B") == "shape:qwen3.5-35b-a3b"
    assert shape_of_model("shape:qwen3-4b") == "shape:qwen3-4b" and shape_name("Qwen/Qwen3-4B") is None
    assert {"qwen3.5-35b-a3b", "qwen3-4b", "qwen3-8b", "smollm2-135m"} <= set(SHAPES)
    with pytest.raises(UnknownShape, match="choose one of"):
        shape_name("shape:qwen9-1t")
    with pytest.raises(UnknownShape, match="no published shape is known for 'my/model'"):
        shape_of_model("my/model")


def test_a_rehearsal_policy_cannot_warm_start() -> None:
    with pytest.raises(ValueError, match="nothing to warm-start from"):
        load_config("smoke", {"training.model": "shape:smollm2-135m"})


def test_an_unknown_shape_is_one_line_and_exit_code_2() -> None:
    done = watercolour_cli("rehearse", "--preset", "judge-led", "training.model=my/model", timeout=120)
    assert done.returncode == 2 and "no published shape is known for 'my/model'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_route_command_says_this_cpus_stack_against_the_measured_one_and_its_route_and_why() -> None:
    done = watercolour_cli("rehearse", "--route", timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("torch ") and lines[0].endswith("(measured: 2.11.0)"), "the CPU build is not the GPU's"
    assert "triton not installed (measured: 3.6.0)" in lines
    assert "GPU: none that torch can use (CUDA build: no, a CPU build)" in lines
    assert lines[-3:-1] == [
        "Gated DeltaNet route: torch",
        "  why: fla cannot be imported here (ModuleNotFoundError: No module named 'fla')",
    ]


@pytest.mark.browser
@pytest.mark.slow
def test_a_rehearsal_runs_the_presets_trainer_against_stand_ins_and_projects_the_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "rehearsal"
    done = watercolour_cli(
        "rehearse", "--preset", "judge-led", "--steps", "2", "--project-steps", "110", "--run-dir", str(run_dir),
        "training.model=shape:tiny-qwen3.5-moe", "training.max_completion_length=32", "training.num_generations=2",
        "training.gradient_accumulation_steps=2", "render.browsers=1",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "rehearsal of judge-led: shape:tiny-qwen3.5-moe (random weights), 2 steps, in" in out
    # The route its update was measured on (no fla on CPU): the GPU's is `fla` or `fla-rollouts`.
    assert (
        "Gated DeltaNet: the project's torch implementation of the rule in the rollouts and the update" in done.stderr
    )
    # The run's own sequence: the Space found asleep and woken, the judge pinged, the Space asleep at the end.
    assert re.search(r"scorer loaded \(Space PAUSED, waited \d+ s\)", out) and "judge answered as" in out
    assert "Space rehearsal/hpsv3-scorer: paused" in out
    table = [line for line in out.splitlines() if re.match(r"\| [12] \| \d", line)]
    assert len(table) == 2, out
    assert re.search(r"peak memory: \d+\.\d GiB", out)
    assert "the whole run, 110 steps with a checkpoint every 10:" in out
    # Synchronous: a step decodes until its longest row (the budget, 32 tokens) ends, with the rows' mean fill.
    assert re.search(
        r"\| recipe lengths \| 32 \| 32 \| 100% \| 64 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ h \|", out
    ), out
    # The preset's real reward over HTTP: the stand-in sketches passed the gate and every part was measured.
    config = RunConfig.load(run_dir / "config.yaml")
    assert config.training.model == "shape:tiny-qwen3.5-moe" and aesthetic_settings(config).backend == "hpsv3"
    rows = RolloutStore(run_dir, 2).rows()
    assert len(rows) == 4 and all(row["reward"] is not None and not row["violations"] for row in rows)
    # Nothing of the random policy is saved in full: a checkpoint holds the adapter and the optimizer.
    checkpoint = run_dir / "checkpoints" / "checkpoint-2"
    assert (checkpoint / "adapter_model.safetensors").is_file() and (checkpoint / "optimizer.pt").is_file()
    assert not list(run_dir.rglob("model*.safetensors"))


@pytest.mark.browser
@pytest.mark.slow
def test_a_rehearsal_of_two_processes_launches_two_ranks_against_the_same_stand_ins(tmp_path: Path) -> None:
    run_dir = tmp_path / "rehearsal"
    done = watercolour_cli(
        "rehearse", "--preset", "judge-led", "--steps", "2", "--processes", "2", "--run-dir", str(run_dir),
        "training.model=shape:tiny-qwen3.5-moe", "training.max_completion_length=16", "training.num_generations=2",
        "training.per_device_batch_size=2", "training.gradient_accumulation_steps=1", "render.browsers=2",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 steps in 2 processes" in done.stdout and "launching 2 processes" in done.stderr
    # Each rank generated and scored its group against the rehearsal's stand-ins: two groups a step, all measured.
    rows = RolloutStore(run_dir, 2).rows()
    assert sorted({(row["step"], row["group"]) for row in rows}) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert all(row["reward"] is not None for row in rows)
    assert (run_dir / "checkpoints" / "checkpoint-2" / "rng_state_1.pth").is_file()
    assert re.search(r"the whole run, \d+ steps with a checkpoint every \d+:", done.stdout), done.stdout


def test_the_judge_stand_in_queues_every_call_the_judge_makes_at_once() -> None:
    # Before it accepts any: a connection the listen queue cannot hold is dropped, and the client only connects
    # again after TCP's 1 s retransmit, a second no real endpoint adds to the judge's answer.
    from rewards.judging.settings import JudgeSettings
    from watercolour.rehearsal.services import JudgeHandler, StandInServer

    at_once = 2 * JudgeSettings().max_concurrency
    server = StandInServer(("127.0.0.1", 0), JudgeHandler)
    clients = []
    try:
        for _ in range(at_once):
            client = socket.create_connection(server.server_address[:2], timeout=0.5)
            clients.append(client)
    finally:
        for client in clients:
            client.close()
        server.server_close()
    assert len(clients) == at_once
