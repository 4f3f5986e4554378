"""The demo's learning recipe on a CUDA GPU, with more generations and steps: `watercolour.training.demo_run.run_demo`
(compact warm start, then GRPO from the adapter, scored by the offline composite reward on real renders).

The GPU machine has no Chromium of its own: source `lab/scripts/gpu_render_env.sh` first (a bundled Debian Chromium
with Mesa llvmpipe, the same renderer as on the dev box; docs/gpu.md says how the bundle is carried).

    python lab/scripts/gpu_learn.py --gguf SmolLM2-135M-Instruct.gguf --out DIR [--steps 30] [--generations 16]
        [--groups 1] [--style named] [--seed 0] [--learning-rate 1e-4]

Writes the run directory to `DIR/run/` (resumed when it is already there) and `DIR/gpu_learn.json`: the summary,
the per-step time split and the peak GPU memory.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, required=True, help="SmolLM2-135M-Instruct GGUF file")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--generations", type=int, default=16, help="rollouts a group (num_generations)")
    parser.add_argument("--groups", type=int, default=1, help="groups a step (the batch is generations x groups)")
    parser.add_argument("--style", choices=("compact", "named"), default=None, help="warm-start style (the demo's)")
    parser.add_argument("--seed", type=int, default=0, help="training.seed: LoRA init, sampling, data order")
    parser.add_argument("--learning-rate", type=float, default=None, help="default: the demo preset's")
    parser.add_argument("--examples", type=int, default=24, help="warm-start examples (the demo's)")
    parser.add_argument("--epochs", type=float, default=2.0, help="warm-start epochs (the demo's)")
    parser.add_argument("--no-trackio", action="store_true", help="train without trackio (not on the GPU image)")
    parser.add_argument("--browsers", type=int, default=4, help="Chromium processes for the reward's renders")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other configuration override, e.g. training.generation=trl",
    )
    return parser.parse_args()


def without_trackio() -> None:
    """The GPU image has no trackio; the run's metrics are in curves.csv all the same."""
    import watercolour.training.trainer as trainer_module

    grpo_args = trainer_module.grpo_args

    def built_without(config: Any, run_dir: Path, *args: Any, **kwargs: Any) -> Any:
        built = grpo_args(config, run_dir, *args, **kwargs)
        built.report_to = []
        return built

    trainer_module.grpo_args = built_without


def run_overrides(args: argparse.Namespace, model_dir: Path) -> dict:
    """The demo run's overrides for this policy, batch, seed and render pool, then `--set`'s."""
    from deployments.presets import merge, parse_overrides

    training: dict = {
        "model": str(model_dir),
        "num_generations": args.generations,
        "per_device_batch_size": args.generations * args.groups,
        "seed": args.seed,
        "gradient_accumulation_steps": 1,
        "steps": args.steps,
        "save_steps": 5,
    }
    if args.learning_rate is not None:
        training["learning_rate"] = args.learning_rate
    return merge(
        {"training": training, "render": {"browsers": args.browsers, "pages_per_browser": 4}},
        parse_overrides(args.overrides),
    )


def time_split(run_dir: Path) -> list[dict]:
    """Each step's reward, subject and gate shares, and where its seconds went, from the run's curves."""
    keys = ("step", "reward_mean", "on_subject_share", "gate_pass_rate", "generate_s", "score_s", "update_s")
    with open(run_dir / "curves.csv") as file:
        return [{key: row.get(key) for key in keys} for row in csv.DictReader(file)]


def main() -> None:
    args = arguments()

    import torch

    from watercolour.policy.loading import convert_smollm2
    from watercolour.run_records.run_dir import use_run_environment
    from watercolour.training.demo_run import DEMO_STYLE, run_demo

    if args.no_trackio:
        without_trackio()
    started = time.perf_counter()
    model_dir = convert_smollm2(args.out / "model", gguf=args.gguf)
    converted_s = time.perf_counter() - started
    run_dir = args.out / "run"
    use_run_environment(run_dir)
    overrides = run_overrides(args, model_dir)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    style = args.style or DEMO_STYLE
    summary = run_demo(run_dir, examples=args.examples, epochs=args.epochs, style=style, overrides=overrides)
    total_s = time.perf_counter() - started
    warm = json.loads((run_dir / "warmstart" / "warmstart.json").read_text())
    cuda = torch.cuda.is_available()
    report = {
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "generations": args.generations,
        "groups": args.groups,
        "style": style,
        "steps": args.steps,
        "overrides": overrides,
        "convert_s": round(converted_s, 1),
        "warmstart_s": warm.get("seconds"),
        "warmstart_losses": [warm["losses"][0], warm["losses"][-1]] if warm.get("losses") else None,
        "run_s": round(total_s, 1),
        "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
        "summary": {**asdict(summary), "rises": summary.rises},
        "time_split": time_split(run_dir),
    }
    (args.out / "gpu_learn.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "time_split"}, indent=2))


if __name__ == "__main__":
    main()
