"""Scoring off the critical path: each completion is rendered as soon as its generation ends.

TRL calls the reward once the whole group has generated, so without this a step waits for its renders after
its longest completion. Here a streamer on `generate` watches the sampled tokens; when a row emits its
end-of-sequence token (or the budget ends), its text is decoded and handed to the reward's `prefetch` on TRL's
own event loop, where the reward runs later. The reward's call then finds that render in the content cache, or
joins it while it is still in flight (`rewards.cache.CachedRenderer`), and only the last rows' renders are left
after generation. TRL's contract is unchanged: the reward still scores the whole batch, with its retries and
dead letters; a prefetch records nothing and its failures are met again by the reward. Measured on the GPU
machine in docs/training.md.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


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


def prefetching_reward(trainer: Any) -> Any:
    """The trainer's reward function that can render ahead (has `prefetch`), or None."""
    return next((reward for reward in trainer.reward_funcs if hasattr(reward, "prefetch")), None)


@contextmanager
def scoring_during_generation(trainer: Any) -> Iterator[list[Any]]:
    """While this is open, the trainer's `generate` calls stream finished rows to its reward's `prefetch`.

    Yields the list of the prefetches' futures (for tests and the benchmark). Without a reward that can
    prefetch, nothing changes.
    """
    futures: list[Any] = []
    reward = prefetching_reward(trainer)
    if reward is None:
        yield futures
        return
    model = trainer.accelerator.unwrap_model(trainer.model_wrapped)
    tokenizer = trainer.processing_class
    eos = {int(token) for token in trainer.eos_token_ids}

    def submit(row: int, token_ids: list[int]) -> None:
        text = tokenizer.decode(token_ids, skip_special_tokens=True)
        future = asyncio.run_coroutine_threadsafe(reward.prefetch(text), trainer.async_loop)
        future.add_done_callback(_retrieve)
        futures.append(future)

    generate = model.generate
    patched = vars(model).get("generate")  # another wrapper of this rollout's generate (the GPU benchmark's)

    @functools.wraps(generate)
    def streaming_generate(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("streamer", FinishedRows(eos, submit))
        return generate(*args, **kwargs)

    model.generate = streaming_generate
    try:
        yield futures
    finally:
        if patched is None:
            del model.generate
        else:
            model.generate = patched


def _retrieve(future: Any) -> None:
    """A prefetch's failure is the reward's to meet again; read it here so asyncio does not report it as lost."""
    if not future.cancelled():
        future.exception()
