"""`python -m bench.gpu --decode-only`: the decode step alone, with and without the host waiting on each step, paired
in one process on the same compiled graphs.

Inside the recipe's whole steps a decode step is timed in minutes of device time (8 x 8,192 at the 35B-A3B shape).
Whether the host waits on each decode step (`watercolour.policy.generation.decode_without_waiting`) changes nothing
that is compiled, so one rollout compiles the step at the trainer's shapes (its batch, prompt, budget and cache
length, as a step would), and then short rollouts of `tokens` alternate between the two settings, `rounds` times,
the order swapped each round. Each is timed whole, from the prompt's prefill to its last token.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any


@contextmanager
def short_rollout(trainer: Any, generations: int, tokens: int, without_waiting: bool) -> Iterator[Callable[[], Any]]:
    """A rollout of the trainer's step as the trainer would generate it, stopped after `tokens` by a stopping
    criterion (a shorter budget would change the cache length and compile again). Yields the call that runs it,
    which returns how many tokens it generated."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    from bench.gpu.checks import generating, rollout_inputs
    from watercolour.policy.generation import decode_without_waiting, rollout_key

    inputs = rollout_inputs(trainer, generations)
    start = inputs["input_ids"].shape[1]

    class After(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            done = input_ids.shape[1] - start >= tokens
            return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)

    config = copy.deepcopy(trainer.generation_config)
    rows = inputs["input_ids"].tolist()
    if trainer.cache_block and config.max_cache_len is None:  # no step has generated yet: size it as a step would
        config.max_cache_len = trainer.block_cache_len(rows)
    # Where the trainer skips the guards of a compiled step, so does this rollout once its shapes have compiled.
    unguarded = trainer.unguarded_decode
    floor = getattr(trainer.model, "_previous_max_cache_length", -1)
    key = rollout_key(rows, config.max_new_tokens, None, config.max_cache_len, floor)
    with (
        generating(trainer) as model,
        unguarded(key) if unguarded is not None else nullcontext(),
        decode_without_waiting() if without_waiting else nullcontext(),
    ):
        yield (
            lambda: (
                model.generate(
                    **inputs, generation_config=config, stopping_criteria=StoppingCriteriaList([After()])
                ).shape[1]
                - start
            )
        )


def timed_decode(trainer: Any, generations: int, tokens: int, without_waiting: bool) -> dict[str, Any]:
    """One short rollout's wall time, and per decode step."""
    import torch

    with short_rollout(trainer, generations, tokens, without_waiting) as generate:
        started = time.perf_counter()
        steps = generate()
        torch.cuda.synchronize() if torch.cuda.is_available() else None
        wall = time.perf_counter() - started
    return {"decode_steps": steps, "wall_s": round(wall, 3), "ms_per_step": round(1000 * wall / steps, 2)}


def decode_pair(
    trainer: Any, generations: int, tokens: int, rounds: int, emit: Callable[[dict], None], cell: dict
) -> None:
    """The compiling rollout, then `rounds` pairs of timed rollouts, each pair in the other order from the last."""
    emit({**cell, "decode_compile": timed_decode(trainer, generations, tokens, trainer.deferred_stop)})
    for round_ in range(rounds):
        for without_waiting in (True, False) if round_ % 2 == 0 else (False, True):
            timed = timed_decode(trainer, generations, tokens, without_waiting)
            emit({**cell, "decode_round": round_ + 1, "without_waiting": without_waiting, **timed})


def decode_pair_summary(rows: list[dict[str, Any]]) -> str:
    """One line per cell: the median ms a decode step synced and without waiting, and their ratio."""
    cells: dict[tuple, dict[bool, list[float]]] = {}
    for row in rows:
        if "decode_round" in row:
            key = (row["shape"], row["generations"], row["path"], row["decode_steps"])
            cells.setdefault(key, {True: [], False: []})[row["without_waiting"]].append(row["ms_per_step"])
    lines = [
        "| shape | G | path | decode steps | rounds | ms a step, synced | ms a step, without waiting | without / synced |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (shape, generations, path, steps), times in cells.items():
        synced, without = statistics.median(times[False]), statistics.median(times[True])
        lines.append(
            f"| {shape} | {generations} | {path} | {steps} | {len(times[True])} | {synced:.2f} | {without:.2f} | "
            f"{without / synced:.2f} |"
        )
    return "\n".join(lines) if len(lines) > 2 else ""
