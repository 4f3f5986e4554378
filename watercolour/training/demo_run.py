"""The demo's learning run: warm start, GRPO from the warm-start adapter, then the learning summary.

`run_demo(run_dir)` is what `watercolour demo` runs on the `demo` preset: SFT on compact procedural sketches
(`watercolour.training.warm_start`, style "compact", the run's subject and its neighbours), a short GRPO run through the
trainer with `training.start_adapter` set to that adapter, and `summarize_run` over the run's curves. A warm start
already in the run directory is reused and a GRPO run with checkpoints resumes, so an interrupted demo picks up where
it stopped.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from watercolour.policy.procedural import Style
from watercolour.run_records.curve_svg import write_curve_svg
from watercolour.run_records.run_dir import latest_checkpoint, use_run_environment
from watercolour.training.evaluation import RunSummary, format_summary, summarize_run
from watercolour.training.warm_start import ADAPTER_DIR, REPORT_FILE, WARMSTART_DIR, starting_from, warm_start
from watercolour.training.warm_start_cache import (
    DEMO_COLOUR_BLIND,
    DEMO_EPOCHS,
    DEMO_EXAMPLES,
    DEMO_NEIGHBOURS,
    DEMO_PRESET,
    DEMO_STYLE,
)


SUMMARY_FILE = "summary.json"
SHEET_FILE = "first-last.png"


def run_demo(
    run_dir: Path | None = None,
    preset: str = DEMO_PRESET,
    examples: int = DEMO_EXAMPLES,
    epochs: float = DEMO_EPOCHS,
    style: Style = DEMO_STYLE,
    neighbours: bool = DEMO_NEIGHBOURS,
    colour_blind: bool = DEMO_COLOUR_BLIND,
    overrides: dict[str, Any] | None = None,
    echo: bool = True,
) -> RunSummary:
    """Warm start, GRPO from it, and the summary of the GRPO run's reward (also written to summary.json)."""
    from deployments.presets import load_config

    overrides = dict(overrides or {})
    if run_dir is not None:
        overrides["run_dir"] = str(run_dir)
    config = load_config(preset, overrides)
    assert config.run_dir is not None
    run_dir = Path(config.run_dir)

    # ---- trackio reads its directory once, when TRL is first imported: the warm start imports it, so set it first
    use_run_environment(run_dir)

    # ---- warm start (reused when a finished one is already in the run directory)
    adapter = run_dir / WARMSTART_DIR / ADAPTER_DIR
    if not (run_dir / WARMSTART_DIR / REPORT_FILE).is_file():
        warm_start(
            config,
            run_dir,
            examples=examples,
            epochs=epochs,
            style=style,
            neighbours=neighbours,
            colour_blind=colour_blind,
            echo=print,
        )
    config = starting_from(config, adapter)

    # ---- GRPO from the warm-start adapter
    from watercolour.training.run import train

    written = train(config, resume=latest_checkpoint(run_dir) is not None, echo=echo)

    # ---- did the reward rise?
    summary = summarize_run(run_dir)
    (run_dir / SUMMARY_FILE).write_text(json.dumps({**asdict(summary), "rises": summary.rises}, indent=2) + "\n")
    curve = write_curve_svg(run_dir, title=f"{config.name}: {config.training.subject}")
    sheet = write_first_last_sheet(run_dir, config.training.num_generations)
    if echo:
        print(format_summary(summary))
        print(f"gallery: {written['gallery']}  curve: {curve}  first and last step: {sheet}")
        print(f"summary: {run_dir / SUMMARY_FILE}")
    return summary


def write_first_last_sheet(run_dir: Path, columns: int) -> Path:
    """A contact sheet of the first step's paintings above the last step's (`first-last.png`), each labelled with
    its step, reward and whether it shows the subject's colours."""
    from watercolour.run_records.contact_sheet import contact_sheet
    from watercolour.run_records.rollout_store import RolloutStore

    rows = RolloutStore(run_dir, columns).rows()
    steps = sorted({row["step"] for row in rows})
    tiles = []
    for step in (steps[0], steps[-1]) if steps else ():
        for row in (row for row in rows if row["step"] == step):
            png = (run_dir / row["png"]).read_bytes() if row["png"] else None
            reward = "-" if row["reward"] is None else f"{row['reward']:.2f}"
            mark = {True: " on", False: " off", None: ""}[row.get("on_subject")]
            tiles.append((f"step {step}: {reward}{mark}", png))
    out = run_dir / SHEET_FILE
    out.write_bytes(contact_sheet(tiles, columns=max(1, columns)))
    return out
