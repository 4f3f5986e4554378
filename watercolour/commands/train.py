"""`watercolour train`: one GRPO run from a preset, into its run directory; `--resume` continues it.

Writes `config.yaml`, `checkpoints/`, `rollouts/`, `curves.csv`, `dead_letters.jsonl`, `trackio/`, and at the
end `adapter/` and `gallery/index.html`. See docs/training.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from watercolour.commands.arguments import (
    UsageError,
    check_inputs,
    output_folder,
    override,
    positive_int,
    preset,
    run_config,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset", type=preset, required=True, help="Run preset in deployments/presets (e.g. smoke, judge-led)."
    )
    parser.add_argument("--steps", type=positive_int, help="Optimizer steps (overrides training.steps).")
    parser.add_argument("--run-dir", type=output_folder, help="Run directory (default runs/<name>).")
    parser.add_argument("--resume", action="store_true", help="Continue from the run directory's latest checkpoint.")
    parser.add_argument(
        "overrides",
        nargs="*",
        type=override,
        metavar="KEY=VALUE",
        help="Configuration overrides, e.g. training.top_k=0.",
    )


def run(args: argparse.Namespace) -> int:
    from watercolour.run_records.run_dir import use_run_environment

    # ---- configuration: the preset, then key=value overrides, then --steps/--run-dir; the inputs it names
    config = run_config(args.preset, args.overrides, **{"training.steps": args.steps, "run_dir": args.run_dir})
    check_inputs(config)
    run_dir = Path(config.run_dir)

    # ---- trackio keeps its database beside the run unless told otherwise; it reads this once, at import
    use_run_environment(run_dir)
    from watercolour.training.trainer import RunDirInUse, train

    # ---- train, export the adapter, write the gallery
    try:
        outputs = train(config, resume=args.resume)
    except RunDirInUse as error:
        raise UsageError(str(error)) from None
    for name, path in outputs.items():
        print(f"{name}: {path}")
    return 0
