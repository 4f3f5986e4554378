"""`python -m bench.gpu.moe_routing`: how much of the MoE policy's bf16 log-prob error is expert routing.

The log-prob check of `bench.gpu` compares each path's log-probs with a float32 copy of the policy. On the
35B-A3B shape every path, TRL's own loss forward included, lands about 0.1 nats from float32, and each lever of
the fast path alone lands a little further. This measures why, on the 4-layer shape with random weights: a
teacher-forced forward of random tokens in bf16 and in float32, the top-k experts each router picked at every
token of every MoE layer, and the log-prob error split by whether any router of the token picked a different
set. Then the same with the routers' logits computed in float32 (the experts stay bf16).

Prints one JSON line per variant and a table; `--out DIR` also writes `moe_routing.jsonl`.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any


def top_k_sets(model: Any) -> tuple[list[Any], list[Any]]:
    """Forward hooks on every router, recording its (tokens, top_k) expert indices, sorted per token."""
    seen: list[Any] = []
    handles = []
    for module in model.modules():
        if type(module).__name__.endswith("TopKRouter"):
            handles.append(module.register_forward_hook(lambda _m, _i, out: seen.append(out[2].sort(dim=-1).values)))
    return seen, handles


def router_in_float32(model: Any) -> None:
    """Compute every router's logits in float32 (softmax, top-k and the renormalised weights as before)."""
    import torch
    import torch.nn.functional as F

    for module in model.modules():
        if type(module).__name__.endswith("TopKRouter"):

            def forward(hidden_states: Any, self: Any = module) -> Any:
                hidden_states = hidden_states.reshape(-1, self.hidden_dim)
                logits = F.linear(hidden_states.float(), self.weight.float())
                probs = torch.softmax(logits, dim=-1)
                top, indices = torch.topk(probs, self.top_k, dim=-1)
                top = top / top.sum(dim=-1, keepdim=True)
                return logits, top.to(hidden_states.dtype), indices

            module.forward = forward


def token_logprobs(model: Any, ids: Any) -> tuple[Any, list[Any]]:
    import torch

    seen, handles = top_k_sets(model)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[:, :-1].float()
    for handle in handles:
        handle.remove()
    logps = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    return logps, seen


def stats(error: Any) -> dict[str, float]:
    import torch

    if error.numel() == 0:
        return {"n": 0}
    return {
        "n": int(error.numel()),
        "mean": round(float(error.mean()), 5),
        "p99": round(float(torch.quantile(error.flatten()[:1_000_000], 0.99)), 5),
    }


def measure(shape: str, batch: int, tokens: int, seed: int, device: str = "cuda") -> list[dict[str, Any]]:
    import torch

    from watercolour.rehearsal.shapes import build_model, shape_tokenizer

    tokenizer = shape_tokenizer()
    model = build_model(shape, tokenizer, device, torch.bfloat16, seed=seed)
    model.eval()
    reference = copy.deepcopy(model).float()
    generator = torch.Generator(device=device).manual_seed(seed)
    ids = torch.randint(0, len(tokenizer), (batch, tokens), device=device, generator=generator)
    exact, exact_sets = token_logprobs(reference, ids)
    rows = []
    for variant in ("bf16", "bf16, routers in float32"):
        if variant != "bf16":
            router_in_float32(model)
        logps, sets = token_logprobs(model, ids)
        # A token is rerouted when any MoE layer picked another expert set for it than float32 did.
        per_layer = [(a != b).any(dim=-1).view(batch, tokens) for a, b in zip(sets, exact_sets, strict=True)]
        rerouted = torch.stack(per_layer).any(dim=0)[:, :-1]
        error = (logps - exact).abs()
        rows.append(
            {
                "shape": shape,
                "variant": variant,
                "tokens": int(error.numel()),
                "rerouted_share_per_layer": [round(float(layer.float().mean()), 4) for layer in per_layer],
                "rerouted_share": round(float(rerouted.float().mean()), 4),
                "error_all": stats(error),
                "error_same_experts": stats(error[~rerouted]),
                "error_rerouted": stats(error[rerouted]),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| variant | tokens rerouted | error vs float32, all (mean / p99) | same experts | rerouted |",
        "|---|---|---|---|---|",
    ]
    for row in rows:

        def cell(s: dict[str, float]) -> str:
            return f"{s['mean']:.4f} / {s['p99']:.4f} (n {s['n']})" if s.get("n") else "none"

        lines.append(
            f"| {row['variant']} | {100 * row['rerouted_share']:.1f}% | {cell(row['error_all'])} | "
            f"{cell(row['error_same_experts'])} | {cell(row['error_rerouted'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("--shape", default="qwen3.5-35b-a3b-4l")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rows = measure(args.shape, args.batch, args.tokens, args.seed, args.device)
    print(table(rows))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        with (args.out / "moe_routing.jsonl").open("a") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
