"""A run of several processes, launched by the run itself: `training.processes=N` from the CLI or a Prefect run.

The ranks are `watercolour train --config RUN_DIR/launch.yaml` under a launcher: `accelerate launch` with the run's
accelerate config (DDP unless `training.accelerate_config` names FSDP) on a host with GPUs, torchrun with gloo on a
CPU (accelerate's own CPU launch goes through MPI). Each rank trains its share (`watercolour.training.distributed`)
and the main rank writes the run directory once, so the directory, its checkpoints, store and curves are a
one-process run's. The caller waits here: each step line the main rank prints is handed to `echo`, and each step the
store completes to `on_step` (the Prefect run's artifacts, made in the caller's process, which has the run's context).

A rank that fails writes its cause in one line to `RUN_DIR/failed-rank-N.txt` (`record_rank_failure`) before the
launcher stops the others; `LaunchFailed` says that line, and the ranks' whole output is in `RUN_DIR/launch.log`. A
resume launches every rank with `--resume`, each from the same latest checkpoint.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ground.records import RewardParts, rollout_step
from ground.run_config import RunConfig
from rewards.scoring.composite import OnScored


LAUNCH_CONFIG = "launch.yaml"
LAUNCH_LOG = "launch.log"
DDP_CONFIG = "deployments/accelerate/ddp.yaml"
# How often the caller looks at the ranks' output and the store while they train.
POLL_S = 1.0
STEP_LINE = re.compile(r"step \d+/\d+ (\||in progress).*")


class LaunchFailed(RuntimeError):
    """A rank of a launched run failed; the message is its cause in one line."""


class InjectedFault(RuntimeError):
    """Raised on purpose by `fail_at_step`, to rehearse a crash and its resume."""


class FailAtStep:
    """An on_scored hook that raises once `global_step` reaches `step`, after the batch was handed on: in step
    `step + 1`, before its update, so checkpoint-`step` is the run's latest (`train/*`'s `fail_at_step`)."""

    def __init__(self, step: int, then: OnScored | None) -> None:
        self.step, self.then = step, then

    def __call__(self, prompts: list[Any], completions: list[Any], parts: list[RewardParts], kwargs: dict) -> None:
        if self.then is not None:
            self.then(prompts, completions, parts, kwargs)
        state = kwargs.get("trainer_state")
        if state is not None and state.global_step >= self.step:
            step = rollout_step(state)
            raise InjectedFault(
                f"fail_at_step={self.step}: failing on purpose in step {step}, once its rollouts were scored and "
                "before its update"
            )


def launched() -> bool:
    """Whether this process is a rank of a launched run (torchrun and accelerate set WORLD_SIZE)."""
    return "WORLD_SIZE" in os.environ


def launch_command(
    config_file: Path, training: Any, resume: bool, gpus: bool, fail_at_step: int | None = None
) -> list[str]:
    """The launcher's command line for the run's ranks."""
    if gpus:
        launcher = [
            sys.executable, "-m", "accelerate.commands.launch", "--config_file",
            training.accelerate_config or DDP_CONFIG, "--num_processes", str(training.processes),
        ]  # fmt: skip
    else:
        launcher = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={training.processes}",
        ]
    extra = [*(["--resume"] if resume else []), *([f"--fail-at-step={fail_at_step}"] if fail_at_step else [])]
    return [*launcher, "-m", "watercolour.cli", "train", "--config", str(config_file), *extra]


def train_in_processes(
    config: RunConfig,
    resume: bool,
    echo: Callable[[str], None],
    on_step: Callable[[int], None] | None = None,
    fail_at_step: int | None = None,
) -> dict[str, Path]:
    """Launch the run's ranks and wait for them; returns what a one-process run returns."""
    import torch

    from watercolour.run_records.rollout_store import RolloutStore

    run_dir = Path(config.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in run_dir.glob("failed-rank-*.txt"):
        stale.unlink()
    config.save(run_dir / LAUNCH_CONFIG)
    command = launch_command(run_dir / LAUNCH_CONFIG, config.training, resume, torch.cuda.is_available(), fail_at_step)
    echo(f"launching {config.training.processes} processes: {' '.join(command[1:6])} ... (output in {LAUNCH_LOG})")
    store = RolloutStore(run_dir, config.training.num_generations)
    reported = set(store.steps())
    with (run_dir / LAUNCH_LOG).open("ab") as log, running(command, log) as process:
        lines = LogLines(run_dir / LAUNCH_LOG)
        while True:
            done = process.poll() is not None
            for line in lines.new():
                if match := STEP_LINE.search(line):
                    echo(match.group(0))
            for step in sorted(set(store.steps()) - reported):
                reported.add(step)
                if on_step is not None:
                    on_step(step)
            if done:
                break
            time.sleep(POLL_S)
    if process.returncode != 0:
        raise LaunchFailed(failure_line(run_dir, process.returncode))
    return outputs(config)


@contextmanager
def running(command: list[str], log: Any) -> Iterator[subprocess.Popen]:
    """The launcher in a session of its own, ended with every rank if the caller stops waiting (an error in
    `on_step`, a cancelled task)."""
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 15)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()


class LogLines:
    """The lines appended to a file since the last look."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.partial = path, path.stat().st_size, ""

    def new(self) -> list[str]:
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            chunk = handle.read().decode(errors="replace")
            self.offset = handle.tell()
        text = self.partial + chunk
        *lines, self.partial = re.split(r"[\r\n]", text)
        return lines


def record_rank_failure(run_dir: Path, error: BaseException) -> None:
    """A rank's last word: its cause in one line, where the launching process reads it."""
    rank = os.environ.get("RANK", "0")
    cause = " ".join(f"{type(error).__name__}: {error}".split())[:600]
    (Path(run_dir) / f"failed-rank-{rank}.txt").write_text(cause + "\n")


def failure_line(run_dir: Path, returncode: int) -> str:
    """The one line a failed launch ends on: the first rank's own cause, or the launcher's exit."""
    written = sorted(run_dir.glob("failed-rank-*.txt"))
    if written:
        rank = written[0].stem.removeprefix("failed-rank-")
        return f"rank {rank} failed: {written[0].read_text().strip()} (all ranks' output: {run_dir / LAUNCH_LOG})"
    return f"the ranks' launcher exited with code {returncode} (all ranks' output: {run_dir / LAUNCH_LOG})"


def outputs(config: RunConfig) -> dict[str, Path]:
    """What the main rank wrote, as a one-process run returns it."""
    from watercolour.run_records.curves import CurvesFile
    from watercolour.run_records.run_dir import CHECKPOINTS_DIR

    run_dir = Path(config.run_dir)
    return {
        "config": run_dir / "config.yaml",
        "curves": CurvesFile(run_dir).path,
        "rollouts": run_dir / "rollouts",
        "checkpoints": run_dir / CHECKPOINTS_DIR,
        "adapter": run_dir / "adapter",
        "gallery": run_dir / "gallery" / "index.html",
    }
