"""Prove the training path on a CUDA GPU and measure it: SmolLM2-135M-Instruct, LoRA, bf16, gradient
checkpointing, a few GRPO steps through the real trainer, rollout store and curves.

The GPU machine has no Chromium, so the reward is `rewards.scoring.static.StaticReward` (static gate + length ramp);
renders, the aesthetic scorer and the judge are not run there. bf16 and checkpointing switch on by themselves
when CUDA is present (`watercolour.policy.lora.device_settings`).

    python scripts/gpu_proof.py --gguf SmolLM2-135M-Instruct.Q4_1.gguf --out DIR [--steps 4] [--generations 8]

Writes `DIR/run/` (the usual run directory) and `DIR/summary.json` (per-step time split, peak GPU memory).
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, required=True, help="SmolLM2-135M-Instruct GGUF file")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--max-len", type=int, default=1024, help="max completion tokens")
    args = parser.parse_args()

    import torch

    from deployments.presets import load_config
    from rewards.scoring.static import StaticReward
    from watercolour.policy.loading import convert_smollm2
    from watercolour.training.trainer import train

    started = time.perf_counter()
    model_dir = convert_smollm2(args.out / "model", gguf=args.gguf)
    converted_s = time.perf_counter() - started
    config = load_config(
        "smoke",
        {
            "run_dir": str(args.out / "run"),
            "training.model": str(model_dir),
            "training.num_generations": args.generations,
            "training.per_device_batch_size": args.generations,
            "training.gradient_accumulation_steps": 1,
            "training.max_completion_length": args.max_len,
            "training.steps": args.steps,
            "training.save_steps": 2,
        },
    )
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    paths = train(config, make_reward=StaticReward)
    train_s = time.perf_counter() - started
    with open(paths["curves"]) as file:
        curves = list(csv.DictReader(file))
    summary = {
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "torch": torch.__version__,
        "steps": args.steps,
        "generations": args.generations,
        "max_completion_length": args.max_len,
        "convert_s": round(converted_s, 1),
        "train_s": round(train_s, 1),
        "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if torch.cuda.is_available()
        else None,
        "curves": curves,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: v for k, v in summary.items() if k != "curves"}, indent=2))
    for row in curves:
        print({k: row[k] for k in row if k.startswith(("step", "reward_mean", "gate", "time"))})


if __name__ == "__main__":
    main()
