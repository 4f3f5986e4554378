"""`watercolour evaluate`: sample K paintings from the base policy and from an adapter, score both, compare.

Prints the reward distribution before and after (mean, median, share under 0.3, gate pass rate) and writes
`OUT/evaluation.json` and a side-by-side gallery `OUT/index.html`. See docs/learning.md.
"""

from __future__ import annotations

import argparse
import json

from watercolour.commands.arguments import (
    UsageError,
    check_inputs,
    existing_folder,
    output_folder,
    override,
    positive_int,
    preset,
    run_config,
    writable_folder,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--adapter", type=existing_folder, required=True, help="A LoRA adapter folder (warm start or run)."
    )
    parser.add_argument(
        "--base",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="Also sample the base policy on the same prompts and seeds (default on).",
    )
    parser.add_argument(
        "--against",
        type=existing_folder,
        help="Compare with this adapter instead of the base policy (e.g. a run's warm start against its final "
        "adapter); same base model, prompt and seeds.",
    )
    parser.add_argument("--n", type=positive_int, default=8, help="Paintings per policy (default 8).")
    parser.add_argument(
        "--preset",
        type=preset,
        help="Preset for sampling and scoring (default: the one the adapter was trained with).",
    )
    parser.add_argument("--out", type=output_folder, help="Output folder (default: ADAPTER/../evaluation).")
    parser.add_argument("--seed", type=int, default=0, help="Sampling seed, shared by both policies (default 0).")
    parser.add_argument("overrides", nargs="*", type=override, metavar="KEY=VALUE", help="Configuration overrides.")


def run(args: argparse.Namespace) -> int:
    from watercolour.policy.adapter import METADATA_FILE

    for adapter in (args.adapter, args.against):
        if adapter is not None and not (adapter / "adapter_config.json").is_file():
            raise UsageError(f"{adapter} holds no adapter_config.json: pass a LoRA adapter folder")
    metadata = args.adapter / METADATA_FILE
    trained_with = json.loads(metadata.read_text()).get("config_name") if metadata.is_file() else None
    preset_name = args.preset or trained_with
    if not preset_name:
        raise UsageError(f"{args.adapter} does not say which preset trained it: pass --preset (e.g. demo)")
    config = run_config(preset_name, args.overrides)
    check_inputs(config)
    out = args.out or args.adapter.parent / "evaluation"
    writable_folder(out, "--out")
    from watercolour.training.evaluation import evaluate, format_evaluation

    report = evaluate(args.adapter, args.n, config, out, base=args.base, seed=args.seed, against=args.against)
    print(f"{report['subject']}, {args.n} samples per policy, backends {report['backends']}")
    print(format_evaluation(report))
    print(f"gallery: {report['gallery']}")
    return 0
