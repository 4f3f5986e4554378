"""`watercolour train`: one GRPO run from a preset, into its run directory; `--resume` continues it.

Writes `config.yaml`, `checkpoints/`, `rollouts/`, `curves.csv`, `dead_letters.jsonl`, `trackio/`, and at the
end `adapter/` and `gallery/index.html`. See docs/training.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", required=True, help="Run preset in deployments/presets (e.g. smoke, judge-led).")
    parser.add_argument("--steps", type=int, help="Optimizer steps (overrides training.steps).")
    parser.add_argument("--run-dir", type=Path, help="Run directory (default runs/<name>).")
    parser.add_argument("--resume", action="store_true", help="Continue from the run directory's latest checkpoint.")
    parser.add_argument(
        "overrides", nargs="*", metavar="KEY=VALUE", help="Configuration overrides, e.g. training.top_k=0."
    )


def run(args: argparse.Namespace) -> int:
    from watercolour.config import load_config, parse_overrides
    from watercolour.run_dir import use_run_environment

    # ---- configuration: the preset, then --steps/--run-dir, then key=value overrides
    overrides = parse_overrides(args.overrides)
    if args.steps is not None:
        overrides["training.steps"] = args.steps
    if args.run_dir is not None:
        overrides["run_dir"] = str(args.run_dir)
    config = load_config(args.preset, overrides)
    assert config.run_dir is not None
    run_dir = Path(config.run_dir)

    # ---- trackio keeps its database beside the run unless told otherwise; it reads this once, at import
    use_run_environment(run_dir)
    from watercolour.trainer import RunDirInUse, train

    # ---- train, export the adapter, write the gallery
    try:
        outputs = train(config, resume=args.resume)
    except RunDirInUse as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for name, path in outputs.items():
        print(f"{name}: {path}")
    return 0
