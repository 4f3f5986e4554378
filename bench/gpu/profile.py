"""Where a compiled decode step's time goes: a short rollout under torch.profiler, after the benchmark's steps.

`update_profile` does the same for the update: one micro-batch of the last step, forward and backward as the
trainer ran it, after the timed steps (so the profiler slows none of them), its GPU time sorted into what it went
to: by kind of kernel, and by part of the model and phase (`bench/gpu/update_parts.py`).

The rollout keeps the trainer's shapes (same batch, prompt padding and cache length, so the compiled graphs are
reused) and stops after a few dozen tokens through a stopping criterion rather than a shorter budget, which
would change the cache length and recompile. The report says how much of each token's wall time the GPU was
busy: far below 100% means the host (Python, guards, sampling) is the bottleneck, not the memory.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def decode_profile(
    trainer: Any,
    generations: int,
    out: Path,
    name: str = "fast",
    tokens: int = 48,
    without_waiting: bool | None = None,
) -> dict[str, Any]:
    """A short rollout at the trainer's shapes under torch.profiler; the host waits on each decode step or not as the
    trainer does, unless `without_waiting` says."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from bench.gpu.decode_pair import short_rollout

    without = trainer.deferred_stop if without_waiting is None else without_waiting
    with short_rollout(trainer, generations, tokens, without) as generate:
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        with profile(activities=activities) as prof:
            started = time.perf_counter()
            tokens = generate()
            torch.cuda.synchronize() if torch.cuda.is_available() else None
            wall = time.perf_counter() - started
    events = prof.key_averages()
    device_us = sum(e.self_device_time_total for e in events)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"profile-{name}.txt").write_text(
        events.table(sort_by="self_cpu_time_total", row_limit=25)
        + "\n"
        + (
            events.table(sort_by="self_device_time_total", row_limit=40, max_name_column_width=120)
            if device_us
            else ""
        )
    )
    return {
        "tokens": tokens,
        "wall_ms_per_token": round(1000 * wall / tokens, 2),
        "device_ms_per_token": round(device_us / 1000 / tokens, 2),
        "device_busy_share": round(device_us / 1e6 / wall, 3),
        **compiled_step_parts(events),
        **compiled_step_kernels(prof.profiler.function_events),
    }


# The profiler's name for a call of a graph inductor compiled: one a decode step where it compiled whole.
COMPILED_CALL = "## Call CompiledFxGraph"


def compiled_step_parts(events: Any) -> dict[str, float]:
    """Per call of the compiled decode step (the profile's prompt and its prefill aside): its GPU time, the host's
    two costs before the GPU runs it, dynamo's guards and cache lookup, and the CUDA graph's launch, and the host's
    waits for the GPU: reads that drain it (a decode loop that never waits has about none a step) and waits on an
    event."""
    rows = {event.key: event for event in events}
    graphs = [event for event in events if event.key.startswith(COMPILED_CALL)]
    calls = sum(event.count for event in graphs)
    if not calls:
        return {}

    def host_ms(name: str) -> float:
        event = rows.get(name)
        return round(event.cpu_time_total / 1000 / calls, 2) if event is not None else 0.0

    def host_calls(name: str) -> float:
        event = rows.get(name)
        return round(event.count / calls, 2) if event is not None else 0.0

    return {
        "compiled_steps": calls,
        "step_device_ms": round(sum(event.device_time_total for event in graphs) / 1000 / calls, 2),
        "guards_ms": host_ms("TorchDynamo Cache Lookup"),
        "graph_launch_ms": host_ms("cudaGraphLaunch"),
        # A read of a result (`.item()`, a copy to the host) waits until the GPU has run everything queued, so
        # the GPU idles while the host queues the next step; a deferred stop check waits on the step before.
        "stream_syncs": host_calls("cudaStreamSynchronize"),
        "stream_sync_ms": host_ms("cudaStreamSynchronize"),
        "event_wait_ms": host_ms("cudaEventSynchronize"),
    }


DECODE_COLUMNS = {
    "wall_ms_per_token": "wall ms a step",
    "device_ms_per_token": "GPU ms a step",
    "step_device_ms": "compiled step GPU ms",
    "guards_ms": "guards ms",
    "graph_launch_ms": "graph launch ms",
    "stream_syncs": "reads of results a step",
    "stream_sync_ms": "read wait ms",
    "event_wait_ms": "event wait ms",
}


def decode_summary(rows: list[dict[str, Any]]) -> str:
    """One line per profiled path: a decode step's wall time against the GPU's, and what the host spent and waited
    in it (the compiled step's columns are empty where nothing compiled, as on a CPU)."""
    lines = [
        "| shape | G | path | " + " | ".join(DECODE_COLUMNS.values()) + " |",
        "|---|---|---|" + "---|" * len(DECODE_COLUMNS),
    ]
    for row in rows:
        if "profile" in row:
            values = [str(row["profile"].get(key, "-")) for key in DECODE_COLUMNS]
            path = row["path"] + ("-synced" if row.get("without_waiting") is False else "")  # --decode-only's pair
            lines.append(f"| {row['shape']} | {row['generations']} | {path} | " + " | ".join(values) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def compiled_step_kernels(function_events: Any) -> dict[str, Any]:
    """The kernels of a call of the compiled decode step (those its CUDA graph replays, credited to the call), per
    call: how many, and their GPU time by kind (`KERNEL_KINDS`). Empty where nothing compiled."""
    calls, launches = 0, 0
    kinds: dict[str, float] = {}
    for event in function_events:
        if not event.name.startswith(COMPILED_CALL):
            continue
        calls += 1
        stack = [event]
        while stack:
            current = stack.pop()
            stack.extend(current.cpu_children)
            for kernel in current.kernels:
                launches += 1
                kinds[kernel_kind(kernel.name)] = kinds.get(kernel_kind(kernel.name), 0.0) + kernel.duration
    if not calls:
        return {}
    return {
        "step_kernels": round(launches / calls, 1),
        "step_device_ms_by_kind": {
            kind: round(us / 1000 / calls, 2) for kind, us in sorted(kinds.items(), key=lambda kv: -kv[1])
        },
    }


# Where a kernel's GPU time goes, by its name (first match wins); the rest is "other" (copies, norms, activations).
KERNEL_KINDS: list[tuple[str, tuple[str, ...]]] = [
    ("gated delta, fla", ("chunk_", "fused_recurrent", "gated_delta", "tilelang", "_kkt", "solve_tril", "wy_")),
    # Inductor's templates in a compiled decode step are flex attention's (the written cache blocks).
    ("attention", ("flash", "fmha", "cudnn", "attention", "sdpa", "triton_tem")),
    # torch's grouped GEMM is a cutlass kernel whose mangled name carries its problem shape's type.
    ("MoE experts", ("grouped", "group_gemm", "groupproblemshape", "moe")),
    ("matmuls", ("gemm", "cutlass", "xmma", "nvjet", "cublas", "matmul", "sm90", "wgmma")),
    ("elementwise", ("elementwise", "vectorized", "unrolled", "reduce", "triton_")),
]


def kernel_kind(name: str) -> str:
    lowered = name.lower()
    return next((kind for kind, marks in KERNEL_KINDS if any(mark in lowered for mark in marks)), "other")


def record_update_batch(trainer: Any) -> dict[str, Any]:
    """Keep the last micro-batch the trainer prepared for its update, for `update_profile` (the dict it fills)."""
    kept: dict[str, Any] = {}
    original = trainer._prepare_inputs

    def prepare_inputs(*args: Any, **kwargs: Any) -> Any:
        kept["inputs"] = original(*args, **kwargs)
        return kept["inputs"]

    trainer._prepare_inputs = prepare_inputs
    return kept


def update_profile(trainer: Any, kept: dict[str, Any], out: Path, name: str = "fast") -> dict[str, Any]:
    """One micro-batch of the update (the loss's forward, and its backward with the recomputation under gradient
    checkpointing) under torch.profiler: what the trainer's `training_step` does with a prepared batch."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from bench.gpu.update_parts import RANGE, labelled, table, time_by_part

    inputs = kept.get("inputs")
    if inputs is None:
        return {"error": "no update ran"}
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    trainer.model.train()
    with labelled(trainer.model), profile(activities=activities) as prof:
        started = time.perf_counter()
        with trainer.compute_loss_context_manager():
            loss = trainer.compute_loss(trainer.model, inputs)
        trainer.accelerator.backward(loss)
        torch.cuda.synchronize() if cuda else None
        wall = time.perf_counter() - started
    trainer.model.zero_grad(set_to_none=True)
    events = prof.key_averages()
    # Kernels only: an operator's row repeats the time of the kernels it launched.
    # (The part ranges show on the GPU's timeline as spans over their kernels: not kernels.)
    kernels = [
        event
        for event in events
        if event.device_type == torch.autograd.DeviceType.CUDA and not event.key.startswith(RANGE)
    ]
    kinds: dict[str, float] = {}
    for event in kernels:
        kinds[kernel_kind(event.key)] = kinds.get(kernel_kind(event.key), 0.0) + event.self_device_time_total
    device_us = sum(kinds.values())
    tokens = int(inputs["completion_mask"].sum() + inputs["prompt_mask"].sum())
    rows, completion_width = inputs["completion_ids"].shape
    positions = rows * (inputs["prompt_ids"].shape[1] + completion_width)  # what every layer computes, padding too
    out.mkdir(parents=True, exist_ok=True)
    parts = time_by_part(prof.profiler.function_events, device=cuda)
    (out / f"update-profile-{name}.txt").write_text(
        events.table(sort_by="self_device_time_total" if device_us else "self_cpu_time_total", row_limit=40)
        + "\n"
        + table(parts, "GPU" if cuda else "CPU")
    )
    return {
        "tokens": tokens,
        "positions": positions,
        "completion_width": completion_width,
        "wall_s": round(wall, 3),
        "device_s": round(device_us / 1e6, 3),
        "kernel_launches": sum(event.count for event in kernels),
        "device_s_by_kind": {kind: round(us / 1e6, 3) for kind, us in sorted(kinds.items(), key=lambda kv: -kv[1])},
        # On a machine without a GPU, CPU seconds.
        "s_by_part": {part: {phase: round(s, 3) for phase, s in row.items()} for part, row in parts.items()},
    }
