"""What a person watching a run reads while a step runs long: a line a minute, and the step's own line at its end."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

from watercolour.run_records.curves import CurvesFile


def test_a_long_step_says_it_is_in_progress_until_its_line_arrives(tmp_path) -> None:
    os.environ.setdefault("TRACKIO_DIR", str(tmp_path / "trackio"))
    from watercolour.run_records.trainer_callbacks import CurvesCallback

    said: list[str] = []
    callback = CurvesCallback(CurvesFile(tmp_path), echo=said.append, pulse_s=0.05)
    state = SimpleNamespace(global_step=0, max_steps=3, is_world_process_zero=True)
    callback.on_step_begin(None, state, None)
    time.sleep(0.3)
    state.global_step = 1
    callback.on_log(None, state, None, logs={"reward": 0.5, "time/generate_s": 0.1, "time/score_s": 0.1})
    time.sleep(0.2)  # the pulse has stopped: nothing more is said
    pulses = [line for line in said if line.startswith("step 1/3 in progress:")]
    assert len(pulses) >= 3 and said[-1].startswith("step 1/3 | reward 0.500"), said
    assert said.index(pulses[-1]) < len(said) - 1
