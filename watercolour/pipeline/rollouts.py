"""Pipelined rollouts (`training.pipeline.max_staleness` > 0): a step lasts as long as its mean row, not its longest.

A synchronous step decodes its group until the longest row ends; at the recipe's lengths that is 4,362 decode steps
for rows of 1,983 tokens on average, so the batch is half empty (`watercolour.pipeline.row_schedule.simulate`). Here
the trainer's generation goes through `watercolour.pipeline.slot_decode`: a slot a finished row frees starts the next
row at once, a row of this step's group or of one of the next `max_staleness` steps (`RowSchedule`), and the rows
still decoding when the group is whole carry on in the next step's generation, after the update, with the updated
weights. Each row's tokens keep the log-probability they were sampled with.

The loss corrects with TRL's own truncated importance sampling (GRPOTrainer's vLLM correction, written for a
generator whose weights or arithmetic differ from the trained ones: exactly the case of a stale row): each token's
loss is weighed by `min(exp(trained - sampled), 3)` (`token_truncate` at TRL's cap), `trained` its log-probability
under the weights the update trains. A ratio per token, since one row may have been decoded by two versions of the
weights. `trained` is the loss forward's own (`watercolour.pipeline.importance`): TRL's extra forward of the group
before the update would compute the same numbers again. So the trainer tells TRL its rows come with sampling
log-probabilities (`use_vllm`, read only where TRL applies that correction once rollouts bypass its generation);
the versions this was written for are checked.

What stays as it is: every finished completion is scored ahead (its group's seed and subject are its own step's,
even when it finishes during an earlier step's generation), each rollout is stored once, by the step that trains
it, with the weights it was sampled at (`sampled_at`); rows in flight live only in memory, so a run killed or
resumed decodes its next steps afresh and loses no group.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any

from watercolour.pipeline import importance
from watercolour.pipeline.row_schedule import RowSchedule, Ticket
from watercolour.pipeline.slot_decode import Decoded, Row, Sampler, SlotDecoder, decoding, slot_cache_length
from watercolour.policy.early_scoring import DECODE_SWITCH_INTERVAL_S, Prefetches, prefetching_reward, score_ahead


# The TRL versions whose importance sampling correction this reuses (GRPOTrainer's `use_vllm` branches of
# `_generate_and_score_completions` and `_compute_loss`).
TRL_WRITTEN_FOR = "1.16."
# TRL's modes: a ratio per token (a row may span two versions of the weights), clipped from above at its cap.
IMPORTANCE_MODE = importance.MODE


class PipelineRefused(ValueError):
    """Pipelined rollouts were asked of a run they cannot serve."""


def use_trl_importance_correction(trainer: Any) -> None:
    """Make TRL weigh each token's loss by its truncated importance ratio, from the sampling log-probabilities this
    module hands it (`grpo_args` sets the mode)."""
    import trl

    if not trl.__version__.startswith(TRL_WRITTEN_FOR):
        raise RuntimeError(
            f"pipelined rollouts reuse TRL {TRL_WRITTEN_FOR}x's importance sampling correction; TRL "
            f"{trl.__version__} is installed: install trl=={TRL_WRITTEN_FOR}* or set training.pipeline.max_staleness=0"
        )
    if trainer.rollout_func is not None or trainer.tools:
        raise PipelineRefused("pipelined rollouts drive generation themselves: no rollout_func and no tools")
    trainer.use_vllm = True


def one_prompt(dataset: Any) -> None:
    """Rows of later steps start with this step's prompts: refuse a dataset with more than one."""
    import json

    prompts = {json.dumps(row, sort_keys=True, default=str) for row in dataset}
    if len(prompts) > 1:
        raise PipelineRefused(
            f"pipelined rollouts start the next steps' rows with this step's prompt, and this dataset has "
            f"{len(prompts)} different rows: set training.pipeline.max_staleness=0"
        )


class PipelinedRollouts:
    """The trainer's generation when rollouts are pipelined: `generate` returns one step's rows, decoded in slots
    that also decode the next steps' rows (`RowSchedule`), and leaves those in flight."""

    def __init__(self, max_staleness: int, rows_per_step: int, last_step: int, compile: bool, deferred: bool) -> None:
        self.schedule = RowSchedule(rows_per_step, max_staleness, last_step)
        self.compile = compile
        self.deferred = deferred
        self.decoder: SlotDecoder | None = None
        self.prompt_ids: dict[Ticket, tuple[int, ...]] = {}
        self.ahead: dict[int, Prefetches] = {}  # each step's rows scored ahead, wherever they finished
        # The last generated step's prefetches: the reward's wait splits at the last of them (`time/ahead_tail_s`).
        self.scored_ahead: Prefetches | None = None

    def generate(self, trainer: Any, prompt_ids: list[list[int]]) -> tuple[list[list[int]], list[list[float]]]:
        """The completion ids and sampling log-probabilities of the rows of the step `trainer` is about to take, in
        the order of its batch; each row's dataset row gets `sampled_at` (the weights' updates when it started)."""
        from trl.models.utils import unwrap_model_for_generation

        version = trainer.state.global_step
        step = version + 1
        self.check_started(step, prompt_ids)
        with unwrap_model_for_generation(
            trainer.model_wrapped,
            trainer.accelerator,
            gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
        ) as unwrapped:
            decoder = self.decoder_for(trainer, unwrapped, prompt_ids)
            decoder.weights_changed()
            # The compiled decode step's shapes are fixed by the decoder: after the first generation, its guards
            # are skipped (`UnguardedDecode`), as for `generate`'s.
            unguarded = trainer.unguarded_decode if self.compile else None
            key = (decoder.slots, decoder.cache.max_cache_len, decoder.budget)
            interval = sys.getswitchinterval()
            sys.setswitchinterval(min(interval, DECODE_SWITCH_INTERVAL_S))
            try:
                with unguarded(key) if unguarded is not None else nullcontext(), decoding(self.deferred):
                    self.decode_until_ready(trainer, decoder, step, prompt_ids)
            finally:
                sys.setswitchinterval(interval)
        rows = self.schedule.take(step)
        behind = [version - started for _, started in rows]
        metrics = trainer._metrics["train"]
        metrics["pipeline/decode_steps"].append(decoder.steps)
        fill = decoder.fill()  # None when the step's rows had all ended during earlier steps
        if fill is not None:
            metrics["pipeline/fill"].append(fill)
        metrics["pipeline/behind_max"].append(max(behind))
        metrics["pipeline/in_flight"].append(self.schedule.in_flight(version))
        assert max(behind) <= self.schedule.max_staleness, behind
        for index, (_, started) in enumerate(rows):
            self.prompt_ids.pop(Ticket(step, index), None)
            if trainer._batch_rows is not None:
                trainer._batch_rows[index]["sampled_at"] = started
        self.scored_ahead = self.ahead.pop(step, None)
        decoded: list[Decoded] = [result for result, _ in rows]
        return [row.token_ids for row in decoded], [row.logprobs for row in decoded]

    def check_started(self, step: int, prompt_ids: list[list[int]]) -> None:
        """Rows of `step` started ahead began with an earlier step's prompts: they must be this step's."""
        for index, ids in enumerate(prompt_ids):
            started = self.prompt_ids.get(Ticket(step, index))
            if started is not None and started != tuple(ids):
                raise PipelineRefused(
                    f"row {index} of step {step} was started ahead with another prompt than its batch gives it: "
                    "pipelined rollouts need one prompt a run; set training.pipeline.max_staleness=0"
                )

    def decoder_for(self, trainer: Any, model: Any, prompt_ids: list[list[int]]) -> SlotDecoder:
        """The slot decoder, built at the first step: its slots are the step's batch, its cache holds the longest
        prompt and the budget (in whole blocks for the written-only attention)."""
        if self.decoder is not None:
            return self.decoder
        budget = trainer.max_completion_length
        block = trainer.cache_block or 1
        length = slot_cache_length(max(len(ids) for ids in prompt_ids), budget, block)
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        forward = base.get_compiled_call(trainer.generation_config.compile_config) if self.compile else None
        self.decoder = SlotDecoder(
            base,
            slots=len(prompt_ids),
            budget=budget,
            max_cache_len=length,
            eos_token_ids=trainer.eos_token_ids,
            sampler=Sampler(trainer.generation_config),
            forward=forward,
            late_reads=self.deferred,
        )
        return self.decoder

    def decode_until_ready(self, trainer: Any, decoder: SlotDecoder, step: int, prompt_ids: list[list[int]]) -> None:
        version = step - 1
        stops = trainer.row_stops
        arguments = self.row_arguments(trainer, prompt_ids)
        while True:
            for slot in decoder.free_slots():
                ticket = self.schedule.next_row(version)
                if ticket is None:
                    break
                ids = tuple(prompt_ids[ticket.index])
                self.prompt_ids[ticket] = ids
                stop_at = stops(ticket.step, len(prompt_ids))[ticket.index] if stops is not None else None
                finished = decoder.start(slot, Row(ticket, ids, stop_at))
                if finished is not None:
                    self.finished(trainer, finished, arguments)
            if self.schedule.ready(step):
                break
            if not decoder.in_flight():
                raise RuntimeError(f"step {step}'s rows are not all decoded, and no slot holds a row")
            for finished in decoder.step():
                self.finished(trainer, finished, arguments)
        for finished in decoder.drain():
            self.finished(trainer, finished, arguments)

    def row_arguments(self, trainer: Any, prompt_ids: list[list[int]]) -> list[dict[str, Any]] | None:
        """What the reward's call will be given for each row of the batch (`early_scoring.row_arguments`), or None
        without a reward that scores ahead."""
        from watercolour.policy.early_scoring import row_arguments

        prompts, rows = trainer._batch_prompts, trainer._batch_rows
        if not trainer.early_scoring or prefetching_reward(trainer) is None or prompts is None or rows is None:
            return None
        return row_arguments(trainer, prompts, rows)

    def finished(self, trainer: Any, decoded: Decoded, arguments: list[dict[str, Any]] | None) -> None:
        ticket: Ticket = decoded.key
        self.schedule.finished(ticket, decoded)
        if arguments is None:
            return
        # Its own step's seed: the reward's call for that step will have global_step one less than the step.
        row = {**arguments[ticket.index], "trainer_state": SimpleNamespace(global_step=ticket.step - 1)}
        futures = self.ahead.setdefault(ticket.step, Prefetches())
        score_ahead(trainer, prefetching_reward(trainer), decoded.token_ids, row, futures)


def pipelined(trainer: Any, training: Any, plan: Any) -> PipelinedRollouts:
    """Set the built trainer up for pipelined rollouts, or refuse the run with the fix."""
    use_trl_importance_correction(trainer)
    trainer.importance_from_loss = importance.from_loss(trainer)
    one_prompt(trainer.train_dataset)
    return PipelinedRollouts(
        training.pipeline.max_staleness,
        rows_per_step=trainer.args.per_device_train_batch_size * trainer.args.steps_per_generation,
        last_step=trainer.args.max_steps,
        compile=plan.compile,
        deferred=plan.deferred_stop,
    )
