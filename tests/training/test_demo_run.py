"""The README's main job end to end on the taught tiny policy: warm start, GRPO from it, the summary and curve."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
import yaml
from PIL import Image

from tests.models import tiny_sketcher
from watercolour.run_records.contact_sheet import TILE
from watercolour.training.demo_run import SHEET_FILE, SUMMARY_FILE, run_demo
from watercolour.training.warm_start import REPORT_FILE, WARMSTART_DIR


@pytest.mark.browser
@pytest.mark.slow
def test_run_demo_warm_starts_trains_from_the_adapter_and_summarises(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "trackio"))
    overrides = {
        # The tiny policy was taught on the full prompt; the demo preset's other settings stay.
        "training": {
            "model": str(tiny_sketcher()),
            "prompt": "full",
            "max_completion_length": 1100,
            "steps": 3,
            "save_steps": 10,
            # One group of four a step, as the test was sized for (the preset's six cost a third more), one
            # rollout per micro-batch as the preset trains.
            "num_generations": 4,
            "per_device_batch_size": 1,
            "gradient_accumulation_steps": 4,
            "lora_r": 8,
        }
    }
    summary = run_demo(tmp_path / "learn", examples=2, epochs=1, overrides=overrides)

    run_dir = tmp_path / "learn"
    warm = json.loads((run_dir / WARMSTART_DIR / REPORT_FILE).read_text())
    assert warm["examples"] == 2 and warm["optimizer_steps"] == 2
    # GRPO started from the warm start's adapter and trained three steps.
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["name"] == "demo" and config["training"]["start_adapter"] == str(run_dir / "warmstart" / "adapter")
    assert summary.steps == 3
    written = json.loads((run_dir / SUMMARY_FILE).read_text())
    assert written["steps"] == 3 and written["rises"] == (written["t"] > 2)
    assert written["t"] == pytest.approx(summary.t)
    dots = ET.parse(run_dir / "curve.svg").getroot().findall("{http://www.w3.org/2000/svg}circle[@class='step']")
    assert len(dots) == 3
    # Every step measured its on-subject share, and the summary carries the first and the last.
    assert written["first_on_subject"] is not None and written["last_on_subject"] is not None
    # The contact sheet: the first step's paintings above the last step's, one column per rollout of a group.
    with Image.open(run_dir / SHEET_FILE) as sheet:
        assert sheet.size == (4 * TILE, 2 * (TILE + 16))
    printed = capsys.readouterr().out
    assert "reward slope" in printed and "frac_reward_zero_std" in printed and "curve.svg" in printed
    assert "on-subject share" in printed and SHEET_FILE in printed
