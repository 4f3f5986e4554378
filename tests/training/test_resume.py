"""Crash and resume through the CLI: a 4-step run killed with SIGKILL during step 3, then `--resume`d, ends with
exactly 4 steps of rollouts and curve rows, none twice, and its adapter and gallery."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ground.reference_pool import pool_revision
from ground.run_config import RunConfig
from tests.models import tiny_smoke_cli
from watercolour.run_records.curves import CurvesFile
from watercolour.run_records.rollout_store import RolloutStore


STEPS = 4
GENERATIONS = 8
STARTUP_TIMEOUT_S = 300

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def train_command(run_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "watercolour.cli",
        *tiny_smoke_cli(run_dir, STEPS, GENERATIONS, *extra),
        "training.save_steps=2",
        "render.browsers=1",
    ]


def environment() -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("TRACKIO_DIR", None)  # the CLI's default: the run directory
    return env


def written(sign: Path) -> bool:
    """`sign` is there, and a JSON sign is whole: transformers creates a checkpoint's state and then writes it, and
    a kill between the two is a checkpoint cut short (`latest_checkpoint` passes it over), not the moment wanted."""
    if sign.suffix != ".json":
        return sign.exists()
    try:
        return isinstance(json.loads(sign.read_text()), dict)
    except (OSError, ValueError):
        return False


def kill_when(run_dir: Path, sign: Path) -> None:
    """Start the run, wait for `sign` (a file the run writes during step 3) and SIGKILL it."""
    log = run_dir.parent / "killed-run.log"
    with log.open("w") as output:
        # A file, not a pipe: a full pipe would stall the run on its own progress bar.
        process = subprocess.Popen(
            train_command(run_dir), env=environment(), stdout=output, stderr=output, start_new_session=True
        )
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    try:
        while not written(sign):
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"the run never wrote {sign}"
            time.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        # The render pool's browsers are the run's children, in its own session: end them with it.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert process.returncode == -signal.SIGKILL


# Step 3 in flight, at two moments: right after step 2's checkpoint (generating or scoring step 3), and right
# after step 3's rollouts were stored (its update not yet logged), so the store holds a shard the resume redoes.
KILL_POINTS = {
    "generating": ("checkpoints/checkpoint-2/trainer_state.json", [1, 2]),
    "updating": ("rollouts/step-00003.parquet", [1, 2, 3]),
}


@pytest.mark.parametrize("moment", list(KILL_POINTS))
def test_a_run_killed_in_step_3_resumes_without_duplicate_or_missing_rollouts(tmp_path, moment):
    run_dir = tmp_path / "run"
    sign, stored_at_kill = KILL_POINTS[moment]
    kill_when(run_dir, run_dir / sign)
    store, curves = RolloutStore(run_dir, GENERATIONS), CurvesFile(run_dir)
    # Killed in step 3: step 2 is complete and step 3 never reached its log line.
    assert [int(row["step"]) for row in curves.read()] == [1, 2]
    assert store.steps() == stored_at_kill

    if moment == "generating":
        refused = subprocess.run(train_command(run_dir), env=environment(), capture_output=True, text=True)
        assert refused.returncode == 2 and "--resume" in refused.stderr

    resumed = subprocess.run(train_command(run_dir, "--resume"), env=environment(), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "step 4/4" in resumed.stderr

    assert store.steps() == [1, 2, 3, 4]
    rows = store.rows()
    assert len(rows) == STEPS * GENERATIONS
    assert len({(row["step"], row["group"], row["index"]) for row in rows}) == len(rows)
    assert {int(folder.name) for folder in (store.root / "png").iterdir()} <= {1, 2, 3, 4}
    assert [int(row["step"]) for row in curves.read()] == [1, 2, 3, 4]

    assert RunConfig.load(run_dir / "config.yaml").training.steps == STEPS
    # The run names the pool revision it trained against, in its configuration and in every rollout.
    assert RunConfig.load(run_dir / "config.yaml").pool_revision == pool_revision(None)
    assert {row["pool_revision"] for row in rows} == {pool_revision(None)}
    assert (run_dir / "checkpoints" / "checkpoint-4" / "optimizer.pt").is_file()
    assert '"step": 4' in (run_dir / "adapter" / "watercolour_adapter.json").read_text()
    assert "rollouts/png/" in (run_dir / "gallery" / "index.html").read_text()
    assert (run_dir / "trackio" / "watercolour.db").is_file()
