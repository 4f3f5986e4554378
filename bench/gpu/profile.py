"""Where a compiled decode step's time goes: a short rollout under torch.profiler, after the benchmark's steps.

The rollout keeps the trainer's shapes (same batch, prompt padding and cache length, so the compiled graphs are
reused) and stops after a few dozen tokens through a stopping criterion rather than a shorter budget, which
would change the cache length and recompile. The report says how much of each token's wall time the GPU was
busy: far below 100% means the host (Python, guards, sampling) is the bottleneck, not the memory.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any


def decode_profile(trainer: Any, generations: int, out: Path, tokens: int = 48) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile
    from transformers import StoppingCriteria, StoppingCriteriaList

    from bench.gpu.checks import generating, rollout_inputs

    inputs = rollout_inputs(trainer, generations)
    start = inputs["input_ids"].shape[1]

    class After(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            done = input_ids.shape[1] - start >= tokens
            return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)

    config = copy.deepcopy(trainer.generation_config)
    with generating(trainer) as model:
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        with profile(activities=activities) as prof:
            started = time.perf_counter()
            sequences = model.generate(
                **inputs, generation_config=config, stopping_criteria=StoppingCriteriaList([After()])
            )
            torch.cuda.synchronize() if torch.cuda.is_available() else None
            wall = time.perf_counter() - started
    tokens = sequences.shape[1] - start
    events = prof.key_averages()
    device_us = sum(e.self_device_time_total for e in events)
    out.mkdir(parents=True, exist_ok=True)
    (out / "profile.txt").write_text(
        events.table(sort_by="self_cpu_time_total", row_limit=25)
        + "\n"
        + (events.table(sort_by="self_device_time_total", row_limit=25) if device_us else "")
    )
    return {
        "tokens": tokens,
        "wall_ms_per_token": round(1000 * wall / tokens, 2),
        "device_ms_per_token": round(device_us / 1000 / tokens, 2),
        "device_busy_share": round(device_us / 1e6 / wall, 3),
    }
