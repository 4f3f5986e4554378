"""The slot decoder's decode step at a published shape (random weights), the written-only attention against the packed
one, in one process on one GPU: rows at spread positions, every slot busy, the step compiled as a pipelined run
compiles it (CUDA graphs, grouped experts, the Gated DeltaNet route of this machine). A lab measurement of the
decode step alone, not of a run.

    python lab/scripts/slot_decode_step.py --shape qwen3.5-35b-a3b --attention packed --out gpu-out
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from transformers import CompileConfig, GenerationConfig

from watercolour.pipeline.slot_decode import Row, Sampler, SlotDecoder, decoding
from watercolour.policy.attention import KV_BLOCK, use_packed_gqa
from watercolour.policy.experts import use_grouped_experts
from watercolour.policy.linear_attention import route_gated_delta_rule
from watercolour.rehearsal.shapes import build_model, shape_tokenizer


def measure(model, tokenizer, written_only: bool, args) -> dict:
    use_packed_gqa(model, written_only=written_only)
    torch._dynamo.reset()
    compiled = model.get_compiled_call(
        CompileConfig(fullgraph=False, dynamic=False, backend="inductor", mode="reduce-overhead")
    )
    longest = max(args.positions)
    length = -(-(longest + args.budget + 1) // KV_BLOCK) * KV_BLOCK
    sampler = Sampler(GenerationConfig(do_sample=True, temperature=1.0))
    decoder = SlotDecoder(
        model,
        len(args.positions),
        args.budget,
        length,
        [tokenizer.eos_token_id],
        sampler,
        forward=compiled,
        late_reads=True,
    )
    generator = torch.Generator().manual_seed(0)
    with decoding(True):
        for slot, position in enumerate(args.positions):
            ids = torch.randint(10, len(tokenizer) - 1, (position,), generator=generator).tolist()
            decoder.start(slot, Row(slot, tuple(ids), stop_at=args.budget))
        started = time.perf_counter()
        for _ in range(args.warm):
            decoder.step()
        torch.cuda.synchronize()
        warm_s = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(args.steps):
            decoder.step()
        torch.cuda.synchronize()
        step_ms = (time.perf_counter() - started) / args.steps * 1000
    row = {
        "attention": "written-only" if written_only else "packed",
        "decode_step_ms": round(step_ms, 2),
        "warm_s": round(warm_s, 1),
        "positions": args.positions,
        "cache": length,
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1),
    }
    del decoder
    torch.cuda.empty_cache()
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", default="qwen3.5-35b-a3b")
    parser.add_argument("--budget", type=int, default=8192)
    # Where the eight rows stand when timing starts: the recipe's rows of 1,983 tokens on average, after an ~870-token
    # prompt, at different points of their decode.
    parser.add_argument("--positions", type=int, nargs="+", default=[900, 1300, 1700, 2100, 2500, 2900, 3300, 4500])
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    # One attention a process: `use_packed_gqa` switches sdpa to either function once, not one to the other.
    parser.add_argument("--attention", choices=["written-only", "packed"], default="written-only")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="gpu-out")
    args = parser.parse_args()
    tokenizer = shape_tokenizer()
    model = build_model(args.shape, tokenizer, "cuda", torch.bfloat16).eval()
    route = route_gated_delta_rule(model)
    use_grouped_experts(model)
    print(f"shape {args.shape}, route {route}, {torch.cuda.get_device_name()}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for _ in range(args.repeats):
        written_only = args.attention == "written-only"
        row = {
            "shape": args.shape,
            "device": torch.cuda.get_device_name(),
            **measure(model, tokenizer, written_only, args),
        }
        print(json.dumps(row), flush=True)
        with (out / "slot_decode_step.jsonl").open("a") as rows:
            rows.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
