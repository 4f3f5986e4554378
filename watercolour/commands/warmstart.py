"""`watercolour warmstart`: SFT the preset's policy on pool and procedural sketches; writes the start adapter.

The adapter lands in `RUN_DIR/warmstart/adapter`; start GRPO from it with `training.start_adapter=<that path>`.
See docs/learning.md.
"""

from __future__ import annotations

import argparse

from watercolour.commands.arguments import (
    UsageError,
    check_inputs,
    output_folder,
    override,
    positive_float,
    positive_int,
    preset,
    run_config,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", type=preset, required=True, help="Run preset in deployments/presets (e.g. demo).")
    parser.add_argument("--run-dir", type=output_folder, help="Run directory (default runs/<name>).")
    parser.add_argument(
        "--examples", type=positive_int, default=48, help="SFT examples, pool and procedural (default 48)."
    )
    parser.add_argument("--epochs", type=positive_float, default=1.0, help="Passes over the examples (default 1).")
    parser.add_argument(
        "--style",
        choices=("full", "compact", "named"),
        default="full",
        help=(
            "full: pool and procedural sketches; compact: short procedural sketches only; named: compact, with CSS "
            "colour names (default full)."
        ),
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        type=override,
        metavar="KEY=VALUE",
        help="Configuration overrides, e.g. training.lora_r=8.",
    )


def run(args: argparse.Namespace) -> int:
    config = run_config(args.preset, args.overrides, run_dir=args.run_dir)
    check_inputs(config)
    from watercolour.training.warm_start import ExamplesDoNotFit, warm_start

    try:
        report = warm_start(config, examples=args.examples, epochs=args.epochs, style=args.style, echo=print)
    except ExamplesDoNotFit as error:
        raise UsageError(str(error)) from None
    print(
        f"warm start: {report.examples} examples ({report.pool_examples} from the pool), {report.optimizer_steps} "
        f"steps, {report.tokens} tokens in {report.seconds:.0f} s; loss {report.first_loss:.3f} -> "
        f"{report.last_loss:.3f}"
    )
    print(f"adapter: {report.adapter_dir}")
    print(f"start GRPO from it: watercolour train --preset {args.preset} training.start_adapter={report.adapter_dir}")
    return 0
