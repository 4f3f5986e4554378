"""A run directory's checkpoints and the process environment a run sets, in one place.

Light on purpose (no torch, no TRL): the Prefect flow asks for the latest checkpoint before anything imports the
trainer, and trackio reads `TRACKIO_DIR` once, when TRL first imports it, so `use_run_environment` must run
before that import. Every entry point that trains (`watercolour train`, `watercolour demo`, the `train` flow's
task, the GPU scripts) calls it first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


CHECKPOINTS_DIR = "checkpoints"


def use_run_environment(run_dir: Path) -> None:
    """Point trackio at the run directory (unless the caller chose a directory): each run keeps its metrics."""
    os.environ.setdefault("TRACKIO_DIR", str((Path(run_dir) / "trackio").resolve()))


def checkpoint_step(checkpoint: Path) -> int:
    return int(checkpoint.name.removeprefix("checkpoint-"))


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint: transformers writes `trainer_state.json` last, so a folder without one, or
    with one a kill cut short (created, not yet written: an empty file), was cut short by a crash."""
    folder = Path(run_dir) / CHECKPOINTS_DIR
    complete = [
        path
        for path in folder.glob("checkpoint-*")
        if path.name.removeprefix("checkpoint-").isdigit() and _state_written(path / "trainer_state.json")
    ]
    return max(complete, key=checkpoint_step, default=None)


class RunDirInUse(RuntimeError):
    """A run was started in a directory that holds a run's checkpoints without being told to continue that run."""


def checkpoint_to_resume(run_dir: Path, resume: bool, fix: str, started_by: str = "a run") -> Path | None:
    """The checkpoint a run in `run_dir` trains on from: None in a directory without one, the latest with `resume`.

    The one guard of both ways to train (`watercolour train` and the `train` flow): a directory that holds
    checkpoints is refused without `resume`, with `fix`, the route's own way to continue or to go elsewhere.
    """
    checkpoint = latest_checkpoint(run_dir)
    if checkpoint is not None and not resume:
        raise RunDirInUse(f"{run_dir} already holds {started_by} (latest checkpoint {checkpoint.name}): {fix}")
    return checkpoint


def _state_written(state: Path) -> bool:
    try:
        return isinstance(json.loads(state.read_text()), dict)
    except (OSError, ValueError):
        return False
