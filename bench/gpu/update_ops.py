"""`python -m bench.gpu.update_ops`: the operations one update micro-batch of the recipe's policy dispatches, per
Gated DeltaNet implementation, on any machine.

Where the update is host-bound (one H200 sat 25% busy through it, with transformers' torch reference of the Gated
DeltaNet layers), its time follows the number of kernels launched from Python more than their work. That number does
not depend on the device or on the layers' widths: this builds the Qwen3.5-35B-A3B structure (40 layers, 3 linear
attention to 1 full, 256 experts, 8 a token) at small widths, wraps it as the trainer does (LoRA on every linear
layer, gradient checkpointing), runs one micro-batch's forward, its completion log-probs and the backward, and counts
the aten operations dispatched, views left out (`linear_attention.counted_ops`). The counts of the kernels that
depend on the structure (240 grouped expert GEMMs, 180 triangular solves at 3,492 tokens) are those of the update's
profile on the H200 (lab/results/gpu/2026-12-04-h200-decode-levers-before-update-profile.txt).

    python -m bench.gpu.update_ops --tokens 3492 9092      # a minute on a CPU
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from bench.gpu.linear_attention import chunk_kernel, counted_ops, kernels


# The recipe's policy at small widths: everything that sets how many operations a step dispatches is kept.
SMALL_WIDTHS = dict(
    hidden_size=64,
    head_dim=16,
    num_attention_heads=4,
    num_key_value_heads=2,
    linear_key_head_dim=16,
    linear_value_head_dim=16,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    moe_intermediate_size=16,
    shared_expert_intermediate_size=16,
    vocab_size=1024,
)


def recipe_structure(layers: int | None = None) -> Any:
    """The 35B-A3B policy's structure at `SMALL_WIDTHS`, wrapped for training as `build_trainer` wraps it."""
    import torch
    from peft import get_peft_model
    from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

    from ground.run_config import TrainingSettings
    from watercolour.policy.lora import lora_config
    from watercolour.rehearsal.shapes import SHAPES

    fields = {key: value for key, value in SHAPES["qwen3.5-35b-a3b"].items() if key != "model_type"}
    fields.update(SMALL_WIDTHS, **({"num_hidden_layers": layers} if layers else {}))
    torch.manual_seed(0)
    model = Qwen3_5MoeForCausalLM(Qwen3_5MoeTextConfig(**fields)).to(torch.bfloat16)
    model = get_peft_model(model, lora_config(TrainingSettings()))
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.enable_input_require_grads()
    model.train()
    return model


def count(model: Any, tokens: int, function: Any) -> dict[str, Any]:
    """Operations of one micro-batch of `tokens` with `function` as the layers' chunked gated delta rule."""
    import torch

    ids = torch.randint(0, SMALL_WIDTHS["vocab_size"], (1, tokens), generator=torch.Generator().manual_seed(tokens))
    started = time.perf_counter()
    with chunk_kernel(function), counted_ops() as ops:
        logits = model(input_ids=ids).logits
        torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[..., None]).sum().backward()
    model.zero_grad(set_to_none=True)
    return {
        "ops": sum(ops.values()),
        "by_name": dict(ops.most_common(8)),
        "cpu_s": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", nargs="+", type=int, default=[3492, 9092])
    parser.add_argument("--layers", type=int, default=None, help="fewer layers than the recipe's 40 (the tests)")
    args = parser.parse_args(argv)
    from watercolour.policy.gated_delta_rule import chunk_gated_delta_rule

    model = recipe_structure(args.layers)
    implementations = {"transformers' reference": kernels()[0], "the project's": chunk_gated_delta_rule}
    rows = []
    for tokens in args.tokens:
        for name, function in implementations.items():
            row = {"tokens": tokens, "gated_delta_rule": name, **count(model, tokens, function)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("| tokens | Gated DeltaNet | aten ops, one micro-batch | the reference's ops / these |\n|---|---|---|---|")
    for row in rows:
        reference = next(r["ops"] for r in rows if r["tokens"] == row["tokens"])  # measured first, in the same run
        print(f"| {row['tokens']} | {row['gated_delta_rule']} | {row['ops']:,} | {reference / row['ops']:.2f} |")
    return rows


if __name__ == "__main__":
    main()
