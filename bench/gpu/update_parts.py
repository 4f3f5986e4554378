"""What an update micro-batch's time goes to, by part of the model: the Gated DeltaNet layers, the full-attention
layers, the MoE experts, the LoRA adapters, the norms, and what runs outside the model (TRL's loss and log-probs).

A profile's kernel names say what a kernel is (a copy, a multiply, a GEMM), not which layer launched it, and half
of the recipe's update was copies and multiplies. Here every module of a known part opens a profiler range for its
forward (`labelled`), so each forward operation, and each one recomputed under gradient checkpointing, lies in the
range of the innermost part that ran it. A backward operation runs in autograd's engine, outside every range: it is
given the part of the forward operation that recorded its autograd node (the profiler records both with the same
sequence number and the forward's thread). `time_by_part` sums each operation's own time, its kernels' on a GPU
(its CPU time on a CPU), per part and phase: forward, recompute, backward.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


RANGE = "part::"
BACKWARD = "autograd::engine::evaluate_function: "
OUTSIDE = "outside the model (the loss, log-probs)"
UNLAUNCHED = "kernels of no recorded operation"
PHASES = ("forward", "recompute", "backward")
# Operations that are a part of their own wherever they run (the trainer patches the LM head into the model's forward).
OPERATIONS = {"ChunkedLogProbFunction": "LM head and log-probs (TRL's chunked kernel)"}
LORA = {"lora_A", "lora_B", "lora_dropout", "lora_embedding_A", "lora_embedding_B", "lora_magnitude_vector"}
# A module name's components, read from its end, that name its part (first match wins).
PARTS: list[tuple[str, str]] = [
    (r"experts", "MoE experts"),
    (r"shared_expert(_gate)?", "shared expert"),
    (r".*norm", "norms"),
    (r"linear_attn", "Gated DeltaNet layers"),
    (r"self_attn", "full attention layers"),
    (r"lm_head", "LM head"),
    (r"embed_tokens", "embedding"),
]


def part_of(name: str, module: Any) -> str | None:
    """The part a module's own operations belong to, from its qualified name; None for a module that only holds
    others (its operations go to the innermost part around it)."""
    components = name.split(".") if name else []
    if LORA & set(components) or (hasattr(module, "base_layer") and hasattr(module, "lora_A")):
        return "LoRA adapters"  # the adapters' matmuls and the wrapper's casts, scaling and sum
    if len(components) >= 2 and components[-2:] == ["mlp", "gate"]:
        return "MoE router"
    for component in reversed(components):
        for pattern, part in PARTS:
            if re.fullmatch(pattern, component):
                return part
    if components and components[-1] == "mlp":
        return "MoE block (dispatch, combine)" if hasattr(module, "experts") else "MLP"
    if len(components) >= 2 and components[-2] == "layers":
        return "decoder layers (residuals)"
    if not components:
        return "the model's own (masks, rotary, casts)"
    return None


@contextmanager
def labelled(model: Any) -> Iterator[None]:
    """For the duration, every module with a part runs its forward inside a profiler range named after it."""
    import torch

    handles = []
    for name, module in model.named_modules():
        part = part_of(name, module)
        if part is None:
            continue
        stack: list[Any] = []

        def enter(module: Any, args: Any, part: str = part, stack: list[Any] = stack) -> None:
            stack.append(torch.profiler.record_function(RANGE + part))
            stack[-1].__enter__()

        def leave(module: Any, args: Any, output: Any, stack: list[Any] = stack) -> None:
            stack.pop().__exit__(None, None, None)

        # always_call: checkpointing stops a recomputation early by raising inside the forward.
        handles += [module.register_forward_pre_hook(enter), module.register_forward_hook(leave, always_call=True)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def time_by_part(events: list[Any], device: bool) -> dict[str, dict[str, float]]:
    """Seconds per part and phase, from a profile's function events (`prof.profiler.function_events`) taken under
    `labelled`: each event's own time (its kernels' with `device`) goes to the innermost part range around it, or,
    inside autograd's backward, to the part of the forward operation that made the node."""
    from torch.autograd import DeviceType

    backward_started = min(
        (event.time_range.start for event in events if event.name.startswith(BACKWARD)), default=float("inf")
    )
    where: dict[int, tuple[str, str]] = {}  # id(event) -> (part, phase), for the events that decide their subtree

    def place(event: Any) -> tuple[str, str]:
        key = id(event)
        if key not in where:
            parent = event.cpu_parent
            if event.name.startswith(RANGE) or event.name in OPERATIONS:
                # A forward run once the backward has begun is checkpointing's recomputation (the profiler does
                # not always nest it in the backward node that asked for it).
                recomputed = event.time_range.start > backward_started
                part = OPERATIONS.get(event.name) or event.name[len(RANGE) :]
                where[key] = (part, "recompute" if recomputed else "forward")
            elif event.name.startswith(BACKWARD):
                where[key] = (forward_part.get((event.fwd_thread, event.sequence_nr), OUTSIDE), "backward")
            else:
                where[key] = place(parent) if parent is not None else (OUTSIDE, "forward")
        return where[key]

    # A forward operation's part, by its thread and sequence number. Every operation reports the number the next
    # autograd node will take, so the last one to report a number before the next is the node's maker.
    forward_part: dict[tuple[int, int], str] = {}
    for event in sorted(events, key=lambda event: event.time_range.start):
        if event.sequence_nr >= 0 and not event.name.startswith(BACKWARD):
            part, phase = place(event)
            if phase != "backward":
                forward_part[(event.thread, event.sequence_nr)] = part
    seconds: dict[str, dict[str, float]] = {}
    # A kernel is an event of its own and also counted in the operation that launched it: operations only.
    operations = [event for event in events if event.device_type == DeviceType.CPU]
    for event in operations:
        own = event.self_device_time_total if device else event.self_cpu_time_total
        if own:
            part, phase = place(event)
            row = seconds.setdefault(part, dict.fromkeys(PHASES, 0.0))
            row[phase] += own / 1e6
    if device:  # kernels no recorded operation launched
        launched = sum(event.self_device_time_total for event in operations)
        # The ranges themselves show on the GPU's timeline too (spans over their kernels): not kernels.
        kernels = sum(
            event.device_time_total
            for event in events
            if event.device_type != DeviceType.CPU and not event.name.startswith(RANGE)
        )
        if kernels - launched > 0:
            seconds[UNLAUNCHED] = {**dict.fromkeys(PHASES, 0.0), "forward": (kernels - launched) / 1e6}
    return dict(sorted(seconds.items(), key=lambda kv: -sum(kv[1].values())))


def table(seconds: dict[str, dict[str, float]], clock: str) -> str:
    """The parts as a markdown table, largest first, with each one's share of the whole."""
    total = sum(sum(row.values()) for row in seconds.values()) or 1.0
    lines = [
        f"| part ({clock} s) | forward | recompute | backward | all | share |",
        "|---|---|---|---|---|---|",
    ]
    for part, row in seconds.items():
        whole = sum(row.values())
        cells = " | ".join(f"{row[phase]:.3f}" for phase in PHASES)
        lines.append(f"| {part} | {cells} | {whole:.3f} | {whole / total:.0%} |")
    return "\n".join(lines) + "\n"
