"""Training in two processes (gloo, on CPU) the way `accelerate launch` trains on several GPUs: TRL splits each
step's completions between the processes, each scores its own slice with its own browser, and the run directory
still reads as one run. The run launches its ranks itself (`training.processes=2`, `watercolour.training.launch`):
on a CPU-only host through torchrun, which is what accelerate's multi-GPU launcher runs underneath (accelerate's own
multi-CPU launch goes through MPI). A failed rank ends the run in one line; `--resume` trains on across ranks."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.models import tiny_smoke_cli
from watercolour.run_records.rollout_store import RolloutStore
from watercolour.run_records.run_dir import CHECKPOINTS_DIR


PROCESSES = 2
STEPS = 2
GENERATIONS = 4
GLOBAL_BATCH = PROCESSES * GENERATIONS  # one group of 4 per process and step
REPOSITORY = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def train(run_dir: Path, processes: int, *extra: str, fails: bool = False) -> subprocess.CompletedProcess:
    """`watercolour train --preset smoke` for two steps of the tiny policy, in `processes` processes."""
    command = [
        sys.executable,
        "-m",
        "watercolour.cli",
        *tiny_smoke_cli(run_dir, STEPS, GENERATIONS, *extra),
        # One browser per process: the run's total is split between its processes.
        f"render.browsers={processes}",
        f"training.processes={processes}",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPOSITORY)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert (done.returncode != 0) == fails, done.stdout[-3000:] + done.stderr[-6000:]
    return done


def curves(run_dir: Path) -> tuple[list[str], list[dict[str, str]]]:
    with (run_dir / "curves.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("two") / "run"
    return run_dir, train(run_dir, PROCESSES).stdout


def assert_every_rollout_once(run_dir: Path) -> None:
    store = RolloutStore(run_dir, GENERATIONS)
    rows = store.rows()
    assert store.steps() == list(range(1, STEPS + 1))
    assert len(rows) == STEPS * GLOBAL_BATCH
    assert len({(row["step"], row["group"], row["index"]) for row in rows}) == len(rows)
    for step in store.steps():
        assert {row["group"] for row in rows if row["step"] == step} == set(range(GLOBAL_BATCH // GENERATIONS))


def test_two_processes_record_every_rollout_exactly_once(two_process_run):
    run_dir, stdout = two_process_run
    assert_every_rollout_once(run_dir)
    # The main process alone reports what it wrote; the other trained its share and wrote nothing.
    assert stdout.count("adapter: ") == 1
    assert (run_dir / "adapter" / "adapter_model.safetensors").is_file()
    # Each process checkpoints its own random state: both resume where they were.
    checkpoint = run_dir / CHECKPOINTS_DIR / f"checkpoint-{STEPS}"
    assert sorted(path.name for path in checkpoint.glob("rng_state*.pth")) == ["rng_state_0.pth", "rng_state_1.pth"]


def test_two_process_curves_have_a_single_process_runs_shape(two_process_run, tmp_path):
    run_dir, _ = two_process_run
    single = tmp_path / "single"
    train(single, 1)
    columns, rows = curves(run_dir)
    single_columns, single_rows = curves(single)
    assert columns == single_columns
    assert [row["step"] for row in rows] == [row["step"] for row in single_rows] == ["1", "2"]
    # The step's metrics are of the whole gathered batch, logged once by the main process: the best reward is the
    # best of all 8 rollouts (TRL's average over processes would give the mean of each slice's best) and a rate is
    # a share of all 8.
    store_rows = RolloutStore(run_dir, GENERATIONS).rows()
    for row in rows:
        step = [item for item in store_rows if item["step"] == int(row["step"])]
        assert float(row["reward_best"]) == pytest.approx(max(item["reward"] for item in step))
        assert float(row["gate_pass_rate"]) == pytest.approx(sum(item["passed"] for item in step) / len(step))


def test_a_failed_rank_ends_the_run_in_one_line_and_the_resume_trains_on_across_ranks(tmp_path):
    """Rank 0 fails on purpose in step 2, after checkpoint-1: the launch says so in one line, and `--resume` redoes
    step 2 in both processes, every rollout recorded once."""
    run_dir = tmp_path / "run"
    failed = train(run_dir, PROCESSES, "--fail-at-step", "1", fails=True)
    (line,) = [line for line in failed.stderr.splitlines() if line.startswith("watercolour train: rank ")]
    assert "failed: InjectedFault: fail_at_step=1: failing on purpose in step 2" in line, failed.stderr[-2000:]
    assert "Traceback" not in failed.stderr and (run_dir / "launch.log").is_file()
    assert (run_dir / CHECKPOINTS_DIR / "checkpoint-1").is_dir()
    assert not (run_dir / CHECKPOINTS_DIR / f"checkpoint-{STEPS}").exists()
    train(run_dir, PROCESSES, "--resume")
    assert_every_rollout_once(run_dir)
    _, rows = curves(run_dir)
    assert [row["step"] for row in rows] == ["1", "2"]
    assert (run_dir / CHECKPOINTS_DIR / f"checkpoint-{STEPS}" / "rng_state_1.pth").is_file()
