"""Which checkpoint a resumed run trains on from."""

from __future__ import annotations

import json

from watercolour.run_records.run_dir import CHECKPOINTS_DIR, latest_checkpoint


def test_a_checkpoint_whose_state_a_kill_cut_short_is_passed_over(tmp_path):
    folder = tmp_path / CHECKPOINTS_DIR
    for step in (2, 4, 6):
        (folder / f"checkpoint-{step}").mkdir(parents=True)
    (folder / "checkpoint-2" / "trainer_state.json").write_text(json.dumps({"global_step": 2}))
    (folder / "checkpoint-4" / "trainer_state.json").write_text(json.dumps({"global_step": 4}))
    assert latest_checkpoint(tmp_path) == folder / "checkpoint-4", "checkpoint-6 has no state: cut short"
    # Killed between creating the file and writing it (transformers opens it, then writes): empty, then half.
    (folder / "checkpoint-6" / "trainer_state.json").write_text("")
    assert latest_checkpoint(tmp_path) == folder / "checkpoint-4"
    (folder / "checkpoint-6" / "trainer_state.json").write_text('{"global_step": 6, "log_hi')
    assert latest_checkpoint(tmp_path) == folder / "checkpoint-4"
    (folder / "checkpoint-6" / "trainer_state.json").write_text(json.dumps({"global_step": 6}))
    assert latest_checkpoint(tmp_path) == folder / "checkpoint-6"
