"""Scoring off the critical path: each completion is rendered and scored as soon as its generation ends.

TRL calls the reward once the whole group has generated, so without this a step waits for its renders and its
service calls (the aesthetic scorer, the judge) after its longest completion. Here a streamer on `generate` watches
the sampled tokens; when a row emits its end-of-sequence token (or the budget ends), its text is decoded and handed
to the reward's `prefetch` on TRL's own event loop, where the reward runs later, together with what the reward's
call will be given for that row: its prompt, the trainer state and the row's dataset columns. From those the
reward derives the row's group seed and subject, so it can answer the service terms into the content cache too
(all but those whose answer depends on the batch: the judge's group mode). The reward's call then finds render and
answers in the cache, or joins them while they are still in flight, and only the last rows' work is left after
generation. TRL's contract is unchanged: the reward still scores the whole batch, with its retries and dead
letters; a prefetch records nothing and its failures are met again by the reward. While the batch generates,
the GIL goes back to the decoding thread within `DECODE_SWITCH_INTERVAL_S`, so the scoring thread's Python work
fills the GPU's time instead of stalling it. Renders measured on the GPU
machine in docs/gpu.md.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


# How long a scoring thread may keep the GIL once the decoding thread asks for it back, while a step scores during
# generation. A decode step syncs with the GPU (stopping criteria, the streamer), which releases the GIL; a busy
# scoring thread takes it, and Python's default 5 ms interval then lets it keep the GPU idle for up to 5 ms a step,
# some 2,000 times a step. On the GPU machine (docs/gpu.md, early scoring) early steps generated 2.8 and 5.2 s
# slower than their paired steps at 5 ms, and -0.24 and +1.96 s at 0.5 ms, which bounds the stall to about 1 s and
# leaves the scoring thread the time the GPU computes.
DECODE_SWITCH_INTERVAL_S = 0.0005


class FinishedRows:
    """A `generate` streamer that calls `on_finished(row, token_ids)` once per row, as soon as the row ends.

    transformers hands a streamer the prompt batch first, then each step's new token of every row; a finished row
    keeps receiving padding, which is ignored. Rows still open when generation ends finish at `end()`.
    """

    def __init__(self, eos_token_ids: set[int], on_finished: Callable[[int, list[int]], None]) -> None:
        self.eos_token_ids = eos_token_ids
        self.on_finished = on_finished
        self.rows: list[list[int]] | None = None
        self.done: list[bool] = []

    def put(self, value: Any) -> None:
        if self.rows is None:  # the prompt batch
            self.rows = [[] for _ in range(value.shape[0])]
            self.done = [False] * value.shape[0]
            return
        for row, token in enumerate(value.reshape(-1).tolist()):
            if self.done[row]:
                continue
            self.rows[row].append(token)
            if token in self.eos_token_ids:
                self._finish(row)

    def end(self) -> None:
        for row, done in enumerate(self.done):
            if not done:
                self._finish(row)

    def _finish(self, row: int) -> None:
        assert self.rows is not None
        self.done[row] = True
        self.on_finished(row, self.rows[row])


class Prefetches(list):  # type: ignore[type-arg]
    """The futures of a batch's prefetches, in the order its rows finished, and when each prefetch was done
    (`time.perf_counter()`): how long after generation the last painting was ready is the part of the reward's wait
    spent scoring ahead; the rest is the reward call's own."""

    def __init__(self) -> None:
        super().__init__()
        self.finished_at: list[float] = []

    def done(self, _future: Any) -> None:
        self.finished_at.append(time.perf_counter())

    def tail_after(self, ended: float) -> float | None:
        """Seconds from `ended` (the end of generation) until the last prefetch done by now; None without any."""
        return max(0.0, max(self.finished_at) - ended) if self.finished_at else None


def prefetching_reward(trainer: Any) -> Any:
    """The trainer's reward function that can score ahead (has `prefetch`), or None."""
    return next((reward for reward in trainer.reward_funcs if hasattr(reward, "prefetch")), None)


def row_arguments(trainer: Any, prompts: list[Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per row, the keyword arguments TRL's reward call will be given for it (`_calculate_rewards` in TRL 1.16): the
    prompt, the trainer state and the row's dataset columns, one value each rather than one list each."""
    return [
        {
            "prompt": prompt,
            "trainer_state": trainer.state,
            **{name: value for name, value in row.items() if name not in ("prompt", "completion", "completion_ids")},
        }
        for prompt, row in zip(prompts, rows, strict=True)
    ]


@contextmanager
def scoring_during_generation(
    trainer: Any, prompts: list[Any] | None = None, rows: list[dict[str, Any]] | None = None
) -> Iterator[Prefetches]:
    """While this is open, the trainer's `generate` calls stream finished rows to its reward's `prefetch`.

    With the batch's `prompts` and dataset `rows` (TRL's inputs, in the order `generate` receives them), each row
    goes with its `row_arguments`, so the reward can score its service terms ahead. Without them, or for a
    `generate` call over other rows than the batch's, a row goes alone and the reward only renders it. Yields the
    prefetches' futures (`Prefetches`, a list: for the step's timing, tests and the benchmark). Without a reward
    that can prefetch, nothing changes.
    """
    futures = Prefetches()
    reward = prefetching_reward(trainer)
    if reward is None:
        yield futures
        return
    model = trainer.accelerator.unwrap_model(trainer.model_wrapped)
    eos = {int(token) for token in trainer.eos_token_ids}

    batch = row_arguments(trainer, prompts, rows) if prompts is not None and rows is not None else None

    def submit(arguments: list[dict[str, Any]] | None, row: int, token_ids: list[int]) -> None:
        score_ahead(trainer, reward, token_ids, arguments[row] if arguments is not None else None, futures)

    generate = model.generate
    patched = vars(model).get("generate")  # another wrapper of this rollout's generate (the GPU benchmark's)

    @functools.wraps(generate)
    def streaming_generate(*args: Any, **kwargs: Any) -> Any:
        # TRL generates the batch in one call, row i for prompt i; a call of another size is not that batch.
        known = batch if batch is not None and kwargs["input_ids"].shape[0] == len(batch) else None
        kwargs.setdefault("streamer", FinishedRows(eos, functools.partial(submit, known)))
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, DECODE_SWITCH_INTERVAL_S))
        try:
            return generate(*args, **kwargs)
        finally:
            sys.setswitchinterval(interval)

    model.generate = streaming_generate
    try:
        yield futures
    finally:
        if patched is None:
            del model.generate
        else:
            model.generate = patched


def score_ahead(
    trainer: Any, reward: Any, token_ids: list[int], arguments: dict[str, Any] | None, futures: Prefetches
) -> None:
    """Hand a finished completion to the reward's `prefetch` on TRL's event loop, with what the reward's call will be
    given for its row (None: it only renders), and keep its future in `futures`."""
    text = trainer.processing_class.decode(token_ids, skip_special_tokens=True)
    prefetch = reward.prefetch(text, **arguments) if arguments is not None else reward.prefetch(text)
    future = asyncio.run_coroutine_threadsafe(prefetch, trainer.async_loop)
    future.add_done_callback(retrieve_failure)
    future.add_done_callback(futures.done)
    futures.append(future)


def retrieve_failure(future: Any) -> None:
    """A prefetch's failure is the reward's to meet again; read it here so asyncio does not report it as lost."""
    if not future.cancelled():
        future.exception()
