"""One guard for a busy run directory: `watercolour train` and the `train` flow refuse a second run in a directory
that holds another run's checkpoints with the same error, each naming its own way to continue."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from watercolour.run_records.run_dir import CHECKPOINTS_DIR, RunDirInUse


def busy_run_dir(root: Path) -> Path:
    """A run directory another run left: a complete checkpoint, and the flow run that started it."""
    checkpoint = root / "busy" / CHECKPOINTS_DIR / "checkpoint-2"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 2}))
    (root / "busy" / "flow-run.json").write_text(json.dumps({"flow_run_id": "another-flow-run", "name": "other"}))
    return root / "busy"


@pytest.mark.slow
def test_cli_refuses_a_second_run_in_a_busy_directory(tmp_path):
    run_dir = busy_run_dir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "watercolour.cli", "train", "--preset", "smoke", "--run-dir", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"{run_dir} already holds a run (latest checkpoint checkpoint-2): pass --resume" in done.stderr
    assert (run_dir / CHECKPOINTS_DIR / "checkpoint-2").is_dir() and not (run_dir / "curves.csv").exists()


def test_flow_refuses_a_second_run_in_a_busy_directory(tmp_path, prefect_server):
    from flows.train import train

    run_dir = busy_run_dir(tmp_path)
    state = train("smoke", run_dir=str(run_dir), return_state=True)
    assert state.is_failed()
    error = state.result(raise_on_failure=False)
    assert isinstance(error, RunDirInUse)
    assert str(error).startswith(f"{run_dir} already holds the run of flow run another-flow-run (latest checkpoint")
    assert "pass continue_run=true" in str(error)
