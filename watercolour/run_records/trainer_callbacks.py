"""The trainer's per-step callbacks: each step's `curves.csv` row and summary line, a line a minute while a step
runs long, the progress bar without TRL's raw metrics dict, and TRL's log without the rows it prints whole.

Only the trainer imports this module (it subclasses transformers' callbacks, so importing it imports transformers);
the curves themselves, and the summary line's wording, are `watercolour.run_records.curves`'s.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tqdm.auto import tqdm
from transformers import ProgressCallback, TrainerCallback

from watercolour.run_records.curves import CurvesFile, curve_row, summary_line


# Where the per-step summary line goes: stderr under the progress bar (True), nowhere (False), or a callable.
Echo = bool | Callable[[str], None]


def tell(echo: Echo, line: str) -> None:
    if callable(echo):
        echo(line)
    elif echo:
        tqdm.write(line, file=sys.stderr)


class CurvesCallback(TrainerCallback):
    """Appends one `curves.csv` row per step from the step's logged metrics and prints its summary line; while a step
    runs longer than a minute (a recipe step on a GPU takes two to four), it says so once a minute."""

    def __init__(self, curves: CurvesFile, echo: Echo = True, pulse_s: float = 60.0) -> None:
        self.curves = curves
        self.echo = echo
        self.pulse_s = pulse_s
        self._step_started = time.perf_counter()
        self._step_done = threading.Event()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step_started = time.perf_counter()
        self._step_done.set()  # the last step's pulse stops
        self._step_done = threading.Event()
        if state.is_world_process_zero and self.echo:
            step, total, done = state.global_step + 1, state.max_steps, self._step_done
            threading.Thread(target=self._pulse, args=(step, total, done), daemon=True).start()

    def _pulse(self, step: int, total: int, done: threading.Event) -> None:
        while not done.wait(self.pulse_s):
            minutes = (time.perf_counter() - self._step_started) / 60
            tell(self.echo, f"step {step}/{total} in progress: {minutes:.0f} min in")

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        # The end-of-training summary (train_runtime, ...) is logged too; only step logs carry a reward. Every
        # process logs the step (its metrics already gathered); one curves file is written, by the main process.
        if not logs or "reward" not in logs or not state.is_world_process_zero:
            return
        self._step_done.set()
        row = curve_row(state.global_step, {**logs, "step_time": time.perf_counter() - self._step_started})
        self.curves.append(row)
        # To the train flow's run logger (one line per step in the flow's logs), or under the progress bar.
        tell(self.echo, summary_line(row, state.max_steps))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step_done.set()


class DeadLetterRows(logging.Filter):
    """Drops TRL's warning about a row every reward answered None (`GRPOTrainer._calculate_rewards`), which prints
    that row's prompt and completion whole, once a step: the policy's text, untrusted, in the worker's log. A reward
    here answers None only for a dead letter, which the run's `dead_letters.jsonl` records with its cause and the
    step's line counts."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "All reward functions returned None" not in record.getMessage()


# Installed on TRL's GRPO logger by every trainer this project builds (`Logger.addFilter` adds it once).
DEAD_LETTER_ROWS = DeadLetterRows()
TRL_GRPO_LOGGER = "trl.trainer.grpo_trainer"


class QuietProgress(ProgressCallback):
    """The step progress bar without the raw metrics dict after every step (the summary line replaces it)."""

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        return None
