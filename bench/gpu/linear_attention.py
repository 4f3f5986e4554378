"""`python -m bench.gpu.linear_attention`: gradients through one Gated DeltaNet layer, per kernel route, against
float32, and what each route's forward + backward costs.

One linear-attention layer of the Qwen3.5-35B-A3B shape (transformers' `Qwen3_5MoeGatedDeltaNet`, random weights)
takes a random input of `--tokens` positions and a random upstream gradient. The reference is the same layer in
float32 through transformers' torch implementation of the chunked gated delta rule. Each route runs the layer in
bf16 and is compared with it, output and every gradient (the input's and each parameter's), by relative error
||x - ref|| / ||ref||:

- `torch`: the project's torch implementation in bf16 (`watercolour/policy/gated_delta_rule.py`, what the routes
  `torch` and `fla-rollouts` train with; its own error is bf16's);
- `torch, N-token chunks`: the same with other chunk lengths (`OTHER_CHUNKS`);
- `transformers' reference`: transformers' torch implementation in bf16, the one the project's replaces, as the
  baseline of the same run;
- `fla`: fla's kernels as fla dispatches them here (its TileLang backend where it is installed);
- `fla, Triton backward forced`: fla's Triton kernel with fla's refusal lifted, on a machine where fla refuses it
  (Hopper, Triton < 3.7.1), to show what the refusal guards against; never used by training.

The `torch` route in bf16 is autograd through the exact operations with bf16 inputs and weights: its errors are bf16's
own (a per-head gradient summed over every position, such as `dt_bias`'s or `A_log`'s, cancels and can land between
1e-2 and 0.2), and it passes when every error is under `BF16_CEILING`, which only a broken computation crosses (a
kernel that drops a gradient is at 1.0). Another route passes when each tensor's error is at most `SLACK` times the
bf16 torch route's error on that tensor, or under `TOLERANCE`. Each row also counts the aten operations one forward +
backward runs, views left out (`ops`): on a GPU each is a kernel launched from Python, which is what held the update
on the torch routes. Rows go to OUT/linear_attention.jsonl as they are measured.

    python -m bench.gpu.linear_attention --tokens 9092 --out DIR       # 900 prompt + 8,192 completion tokens
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any


TOLERANCE = 2e-2
# The project's implementation with chunk lengths other than its default `CHUNK` (watercolour/policy/gated_delta_rule.py):
# shorter ones mean more kernels, longer ones more work in each.
OTHER_CHUNKS = (64, 256)
SLACK = 2.0
BF16_CEILING = 0.5
# The Qwen3.5-35B-A3B linear-attention layer (transformers' Qwen3_5MoeTextConfig defaults, watercolour/rehearsal/shapes.py).
LAYER: dict[str, Any] = {}
# A few hundredths of the size for CPU runs of this script (the test suite).
TINY_LAYER = dict(
    hidden_size=64,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=16,
    linear_value_head_dim=16,
    num_hidden_layers=1,
    layer_types=["linear_attention"],
)


def build_layer(fields: dict[str, Any], device: str, dtype: Any, seed: int = 0) -> Any:
    import torch
    from transformers import Qwen3_5MoeTextConfig
    from transformers.models.qwen3_5_moe.modeling_qwen3_5_moe import Qwen3_5MoeGatedDeltaNet

    config = Qwen3_5MoeTextConfig(**fields)
    torch.manual_seed(seed)
    with torch.device(device):
        layer = Qwen3_5MoeGatedDeltaNet(config, layer_idx=config.layer_types.index("linear_attention"))
        for name, parameter in layer.named_parameters():
            if name not in ("A_log", "dt_bias"):  # keep the layer's own decay initialisation
                torch.nn.init.normal_(parameter, std=0.02 if parameter.ndim > 1 else 1.0)
    return layer.to(dtype)


@contextlib.contextmanager
def chunk_kernel(function: Callable[..., Any]) -> Iterator[None]:
    """Run the layer's chunked gated delta rule through `function` for the duration."""
    from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as modeling

    saved = modeling.torch_chunk_gated_delta_rule
    modeling.torch_chunk_gated_delta_rule = function
    try:
        yield
    finally:
        modeling.torch_chunk_gated_delta_rule = saved


def kernels() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """transformers' torch implementation (the decorated function's original), and the function as transformers
    dispatches it here (fla's kernel when fla is installed)."""
    from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as modeling

    dispatched = modeling.torch_chunk_gated_delta_rule
    return dispatched.__wrapped__, dispatched


def forward_backward(layer: Any, x: Any, upstream: Any) -> dict[str, Any]:
    """The layer's output and every gradient, as float32 copies."""
    import torch

    x = x.detach().clone().requires_grad_(True)
    layer.zero_grad(set_to_none=True)
    out = layer(x)
    out.backward(upstream.to(out.dtype))
    grads = {"output": out, "input": x.grad}
    # A parameter left without a gradient got none through the kernel: zeros, which the comparison counts as wrong.
    grads.update(
        {
            name: parameter.grad if parameter.grad is not None else torch.zeros_like(parameter)
            for name, parameter in layer.named_parameters()
        }
    )
    return {name: value.detach().float() for name, value in grads.items()}


def relative_errors(result: dict[str, Any], reference: dict[str, Any]) -> dict[str, float]:
    import torch

    errors = {}
    for name, ref in reference.items():
        value = result[name]
        if not torch.isfinite(value).all():
            errors[name] = float("inf")
        else:
            errors[name] = float((value - ref).norm() / ref.norm().clamp_min(1e-30))
    return errors


def passes(errors: dict[str, float], bf16: dict[str, float] | None) -> bool:
    """Against float32: the bf16 torch route (`bf16` None) under the ceiling; another route, tensor by tensor,
    within `SLACK` times the bf16 torch route's error or under `TOLERANCE`."""
    if bf16 is None:
        return all(error <= BF16_CEILING for error in errors.values())
    return all(error <= max(TOLERANCE, SLACK * bf16[name]) for name, error in errors.items())


def timed(run: Callable[[], Any], repeats: int, cuda: bool) -> tuple[float, float | None]:
    """Median seconds of `run` after one warm-up, and the peak GiB it allocated (CUDA only)."""
    import torch

    run()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
    peak = round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None
    return statistics.median(times), peak


def routes(cuda: bool) -> list[tuple[str, Callable[[], contextlib.AbstractContextManager[Any]]]]:
    """(name, context that selects the route) for every route this machine can run."""
    from watercolour.policy.gated_delta_rule import chunk_gated_delta_rule
    from watercolour.policy.linear_attention import fla_facts

    reference, dispatched = kernels()
    found: list[tuple[str, Callable[[], contextlib.AbstractContextManager[Any]]]] = [
        ("torch", lambda: chunk_kernel(chunk_gated_delta_rule)),
        *[
            (
                f"torch, {length}-token chunks",
                lambda length=length: chunk_kernel(partial(chunk_gated_delta_rule, chunk_size=length)),
            )
            for length in OTHER_CHUNKS
        ],
        ("transformers' reference", lambda: chunk_kernel(reference)),
    ]
    facts = fla_facts()
    if cuda and facts.fla:
        found.append(("fla", lambda: chunk_kernel(dispatched)))
        if not facts.fla_backward_correct:
            found.append(("fla, Triton backward forced", lambda: forced_triton(dispatched)))
    return found


@contextlib.contextmanager
def forced_triton(function: Callable[..., Any]) -> Iterator[None]:
    """fla's Triton backward with fla's own refusal lifted and TileLang off: a diagnostic, never for training."""
    from fla.ops.common import chunk_o

    saved, tilelang = chunk_o.TRITON_ABOVE_3_7_1, os.environ.get("FLA_TILELANG")
    chunk_o.TRITON_ABOVE_3_7_1 = True
    os.environ["FLA_TILELANG"] = "0"
    try:
        with chunk_kernel(function):
            yield
    finally:
        chunk_o.TRITON_ABOVE_3_7_1 = saved
        os.environ.pop("FLA_TILELANG") if tilelang is None else os.environ.__setitem__("FLA_TILELANG", tilelang)


@contextlib.contextmanager
def counted_ops() -> Iterator[collections.Counter[str]]:
    """Counts the aten operations run inside, by name, views (which launch nothing) left out."""
    from torch.utils._python_dispatch import TorchDispatchMode

    counts: collections.Counter[str] = collections.Counter()

    class Counting(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            if not func.is_view:
                counts[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    with Counting():
        yield counts


def conv_cost(layer: Any, x: Any, repeats: int, cuda: bool) -> float:
    """Seconds of transformers' torch causal convolution (forward + backward) at the layer's size: the part the
    absent `causal_conv1d` package would replace."""
    import torch
    from transformers.models.qwen3_5_moe.modeling_qwen3_5_moe import causal_conv1d_fn

    mixed = torch.randn(x.shape[0], layer.conv_dim, x.shape[1], device=x.device, dtype=x.dtype, requires_grad=True)

    def run() -> None:
        out = causal_conv1d_fn(mixed, layer.conv1d.weight.squeeze(1), layer.conv1d.bias, activation=layer.activation)
        out.sum().backward()

    return timed(run, repeats, cuda)[0]


def measure(tokens: int, fields: dict[str, Any], repeats: int, emit: Callable[[dict[str, Any]], None]) -> None:
    import torch

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    layer = build_layer(fields, device, torch.bfloat16)
    exact = copy.deepcopy(layer).float()
    generator = torch.Generator(device=device).manual_seed(1)
    x = torch.randn(1, tokens, layer.hidden_size, device=device, generator=generator)
    upstream = torch.randn(1, tokens, layer.hidden_size, device=device, generator=generator)
    with chunk_kernel(kernels()[0]):
        reference = forward_backward(exact, x, upstream)
    del exact
    bf16_errors: dict[str, float] | None = None
    for name, select in routes(cuda):
        row: dict[str, Any] = {"route": name, "tokens": tokens}
        try:
            with select():
                with counted_ops() as ops:
                    errors = relative_errors(forward_backward(layer, x.bfloat16(), upstream), reference)
                seconds, peak = timed(lambda: forward_backward(layer, x.bfloat16(), upstream), repeats, cuda)
        except Exception as error:  # a route a library refuses here is a row of its own, with the library's words
            emit({**row, "refused": f"{type(error).__name__}: {telling_line(str(error))}"})
            continue
        if name == "torch":
            bf16_errors = errors
        worst = max(errors, key=lambda key: errors[key])
        emit(
            {
                **row,
                "max_error": round(errors[worst], 6),
                "worst": worst,
                "errors": {key: round(value, 6) for key, value in errors.items()},
                "passes": passes(errors, bf16_errors if name != "torch" else None),
                "fwd_bwd_s": round(seconds, 4),
                "ops": sum(ops.values()),
                "peak_gib": peak,
            }
        )
    emit(
        {"route": "causal_conv1d (torch)", "tokens": tokens, "fwd_bwd_s": round(conv_cost(layer, x, repeats, cuda), 4)}
    )


def telling_line(message: str) -> str:
    """The line of an error that says what failed: a compiler's `error` line where a kernel's build failed (its
    message opens with the generated source), else the first line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    found = next((i for i, line in enumerate(lines) if "error" in line.lower() and ":" in line), 0)
    if not lines:
        return ""
    # A heading ("Compilation error:") says what failed on the line after it.
    return " ".join(lines[found : found + 2]) if lines[found].endswith(":") else lines[found]


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| route | tokens | passes | max rel. error (tensor) | fwd+bwd s, one layer | aten ops | peak GiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if "refused" in row:
            lines.append(f"| {row['route']} | {row['tokens']} | refused: {row['refused']} | | | | |")
        elif "max_error" in row:
            lines.append(
                f"| {row['route']} | {row['tokens']} | {'yes' if row['passes'] else '**no**'} | "
                f"{row['max_error']:.2e} ({row['worst']}) | {row['fwd_bwd_s']} | {row['ops']} | {row['peak_gib']} |"
            )
        else:
            lines.append(f"| {row['route']} | {row['tokens']} | | | {row['fwd_bwd_s']} | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", nargs="+", type=int, default=[2048, 9092])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="a tiny layer (CPU: the test suite)")
    parser.add_argument("--out", type=Path, default=Path("bench-gpu-out"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with (args.out / "linear_attention.jsonl").open("a") as log:

        def emit(row: dict[str, Any]) -> None:
            rows.append(row)
            log.write(json.dumps(row) + "\n")
            log.flush()
            print(json.dumps(row), flush=True)

        for tokens in args.tokens:
            measure(tokens, TINY_LAYER if args.tiny else LAYER, args.repeats, emit)
    print(table(rows))
    sys.stdout.flush()
    return rows


if __name__ == "__main__":
    main()
