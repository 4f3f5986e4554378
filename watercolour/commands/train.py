"""`watercolour train`: one GRPO run from a preset, into its run directory; `--resume` continues it.

Writes `config.yaml`, `checkpoints/`, `rollouts/`, `curves.csv`, `dead_letters.jsonl`, `trackio/`, and at the
end `adapter/` and `gallery/index.html`. See docs/training.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from watercolour.commands.arguments import (
    UsageError,
    check_inputs,
    existing_file,
    output_folder,
    override,
    positive_int,
    preset,
    run_config,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", type=preset, help="Run preset in deployments/presets (e.g. smoke, judge-led).")
    source.add_argument(
        "--config",
        type=existing_file,
        help="A resolved run configuration (a run's config.yaml; what a run of several processes starts its ranks "
        "with).",
    )
    parser.add_argument(
        "--fail-at-step", type=positive_int, help="Fail on purpose in the step after this one (rehearse a resume)."
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

    # ---- configuration: the preset, then key=value overrides, then --steps/--run-dir; or a resolved one as it is
    if args.config is not None:
        if args.overrides or args.steps or args.run_dir:
            raise UsageError("--config takes the configuration as it is: give no overrides, --steps or --run-dir")
        from ground.run_config import RunConfig
        from rewards.scoring.terms import resolve_terms

        config = resolve_terms(RunConfig.load(args.config))
    else:
        config = run_config(args.preset, args.overrides, **{"training.steps": args.steps, "run_dir": args.run_dir})
    check_inputs(config)
    run_dir = Path(config.run_dir)

    # ---- trackio keeps its database beside the run unless told otherwise; it reads this once, at import
    use_run_environment(run_dir)
    # ---- train, export the adapter, write the gallery
    from watercolour.run_records.run_dir import RunDirInUse
    from watercolour.training.launch import LaunchFailed
    from watercolour.training.run import train

    try:
        outputs = train(config, resume=args.resume, fail_at_step=args.fail_at_step)
    except RunDirInUse as error:
        raise UsageError(str(error)) from None
    except LaunchFailed as error:
        print(f"watercolour train: {error}", file=sys.stderr)
        return 1
    for name, path in outputs.items():
        print(f"{name}: {path}")
    return 0
