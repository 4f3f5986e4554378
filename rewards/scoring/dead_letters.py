"""Dead letters: work that still failed after its retries, appended to `dead_letters.jsonl` in the run directory.

A dead letter is why a rollout's reward is None instead of a number. The file is append-only and each record
goes down in one `write` on an O_APPEND descriptor, so concurrent writers never interleave a line and a crash
loses at most the record being written.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ground.records import DeadLetter
from rewards.errors import ServiceUnavailable


FILENAME = "dead_letters.jsonl"


def dead_letter(
    stage: str, error: Exception, sketch_hash: str | None, step: int | None, attempts: int = 1
) -> DeadLetter:
    """Build the record for a failure; a ServiceUnavailable carries its own stage, cause and attempt count."""
    if isinstance(error, ServiceUnavailable):
        stage, cause, attempts = error.stage, error.cause, error.attempts
    else:
        cause = f"{type(error).__name__}: {error}"
    return DeadLetter(stage=stage, cause=cause, sketch_hash=sketch_hash, attempts=attempts, step=step, at=time.time())


class DeadLetterLog:
    """The append-only dead-letter file of one run."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / FILENAME

    def append(self, letter: DeadLetter) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (letter.model_dump_json() + "\n").encode()
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, line)
        finally:
            os.close(descriptor)

    def read(self) -> list[DeadLetter]:
        if not self.path.exists():
            return []
        lines = self.path.read_text().splitlines()
        # A crash mid-append can leave a half line at the end; it is the record that was being written.
        return [DeadLetter.model_validate_json(line) for line in lines if line.endswith("}")]

    def truncate(self, after_step: int) -> None:
        """Drop the letters of steps after `after_step`: a resumed run replays those steps and writes them again."""
        if not self.path.exists():
            return
        kept = [letter for letter in self.read() if letter.step is None or letter.step <= after_step]
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text("".join(letter.model_dump_json() + "\n" for letter in kept))
        partial.replace(self.path)
