"""Decoding with per-slot refill: when a row ends, its slot starts another row at once, so the batch stays full.

transformers' `generate` decodes a batch until its longest row ends: at the recipe's lengths the longest of eight
rows is 4,362 tokens against a mean of 1,983, so for more than half of a step most of the batch decodes nothing.
transformers' continuous batching (`generate_batch`, paged attention) refills finished slots, but 5.23 refuses a
model with Gated DeltaNet layers ("Invalid layer type: linear_attention"): the recipe's Qwen3.5 cannot use it.

`SlotDecoder` drives the model's own forward over a `SlotCache`, one row a slot:

- a full-attention layer keeps a static key/value tensor per slot and writes each slot's token at that slot's own
  position (a scatter with one index per row), so rows started at different times share one decode step of fixed
  shapes; the step attends through a mask of each slot's written positions made outside the step: a block mask
  whose skipped blocks the written-only attention never reads, or sdpa's boolean mask for the packed attention
  (`watercolour.policy.attention`);
- a Gated DeltaNet layer keeps transformers' own recurrent and convolution states, one row a slot;
- a row starts by a prefill of its prompt alone (transformers' dynamic cache), whose keys, values and states are
  copied into its slot: the slot's previous row leaves nothing behind. A prompt's prefill is kept until the weights
  change, so the rows of a group (one prompt) pay for one prefill.

Each step samples as `generate` does (the generation config's temperature, top-k, top-p and min-p, in transformers'
order) and keeps every sampled token's log-probability as the update computes it: the logits over the temperature,
before top-k and top-p (TRL's `_get_per_token_logps_and_entropies`). So a row decoded with the weights the update
trains has a ratio of 1 at every token up to the arithmetic's noise, and the importance weight of a row sampled by
older weights measures their staleness alone. (TRL asks a vLLM server for log-probabilities after top-k and top-p,
which would also weigh every fresh row's tokens by the truncation; the synchronous route trains on truncated sampling
uncorrected, so these keep the two routes alike where no row is stale.) A step's finished rows are read one step late on a GPU: the host
queues the next step before it waits on the last, and a row that ended pays one wasted step in its slot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    """A row to decode: its prompt's token ids, and where it must end (`stop_at`: a rehearsal's drawn length,
    whose random weights never end a row themselves; None = at an end token or the budget)."""

    key: Any
    prompt_ids: tuple[int, ...]
    stop_at: int | None = None


@dataclass(frozen=True)
class Decoded:
    """A finished row: its completion's token ids (the end token included, when it has one) and the log-probability
    of each under the weights that sampled it."""

    key: Any
    token_ids: list[int]
    logprobs: list[float]


class UnsupportedSampling(ValueError):
    """The generation config asks for a logits processor the slot decoder does not apply."""


def slot_cache_length(prompt_tokens: int, budget: int, block: int = 1) -> int:
    """The positions a slot cache needs for rows of up to `prompt_tokens` and `budget`, in whole blocks: one more than
    both, for a slot whose row has ended goes on writing where it stopped."""
    return -(-(prompt_tokens + budget + 1) // block) * block


def slot_cache(config: Any, slots: int, max_cache_len: int, device: Any) -> Any:
    """A `transformers.Cache` of `slots` rows of up to `max_cache_len` positions, one layer a decoder layer of
    `config`; its `positions` hold where each slot writes its next token."""
    import torch
    from transformers.cache_utils import Cache, LinearAttentionLayer, StaticLayer, get_layer_types_and_kwargs

    class SlotLayer(StaticLayer):
        """A full-attention layer that writes a decode step's token of each row at that row's own position."""

        def __init__(self, max_cache_len: int, owner: Any) -> None:
            super().__init__(max_cache_len=max_cache_len)
            self.owner = owner

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if key_states.shape[-2] != 1:
                raise RuntimeError("a slot cache takes one token a row: prefill rows with `SlotDecoder.start`")
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            keys: Any = self.keys
            values: Any = self.values
            at = self.owner.positions.view(-1, 1, 1, 1)
            keys.scatter_(2, at.expand(-1, key_states.shape[1], 1, key_states.shape[-1]), key_states)
            values.scatter_(2, at.expand(-1, value_states.shape[1], 1, value_states.shape[-1]), value_states)
            return keys, values

    class SlotCache(Cache):
        def __init__(self) -> None:
            layer_types, _ = get_layer_types_and_kwargs(config.get_text_config(decoder=True))
            unknown = sorted(set(layer_types) - {"full_attention", "linear_attention"})
            if unknown:
                raise ValueError(f"the slot decoder has no cache for {', '.join(unknown)} layers")
            self.max_cache_len = max_cache_len
            self.positions = torch.zeros(slots, dtype=torch.long, device=device)
            if self.positions.device.type != "cpu":
                # A decode step's CUDA graph reads the positions where they are; they change in place.
                torch._dynamo.mark_static_address(self.positions)
            super().__init__(
                layers=[
                    SlotLayer(max_cache_len, self) if kind == "full_attention" else LinearAttentionLayer()
                    for kind in layer_types
                ]
            )

        # Every slot's query may see any position: the mask of each slot's written positions does the rest.
        def get_seq_length(self, layer_idx: int = 0) -> int:
            return self.max_cache_len - 1

        def get_query_offset(self, layer_idx: int = 0) -> int:
            return self.max_cache_len - 1

    return SlotCache()


def written_prefix(config: Any, cache: Any) -> tuple[Any, bool]:
    """(the block mask of each slot's written positions when the model attends with the written-only function, else
    None; whether the model takes its masks by kind of layer). A model with Gated DeltaNet layers is handed its
    masks by kind (Qwen3.5 reads a dict so): its linear-attention layers need none in a decode step, and would not
    read a block mask."""
    from transformers.cache_utils import get_layer_types_and_kwargs

    from watercolour.policy.attention import WRITTEN_ONLY, WrittenPrefix

    text = config.get_text_config(decoder=True)
    layer_types, _ = get_layer_types_and_kwargs(text)
    written = getattr(text, "_attn_implementation", None) == WRITTEN_ONLY
    prefix = WrittenPrefix(cache.positions, cache.max_cache_len) if written else None
    return prefix, "linear_attention" in layer_types


def prefill(model: Any, prompt_ids: Sequence[int]) -> tuple[Any, Any]:
    """(the dynamic cache of `prompt_ids` alone, the logits of its last position)."""
    import torch
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    ids = torch.tensor([list(prompt_ids)], device=model.device)
    output = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
    return cache, output.logits[:, -1]


class Sampler:
    """`generate`'s sampling for the processors TRL's generation config turns on, and the log-probabilities the update
    computes (the logits over the temperature)."""

    def __init__(self, generation_config: Any) -> None:
        from transformers import MinPLogitsWarper, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

        config = generation_config
        if (config.repetition_penalty or 1.0) != 1.0 or config.suppress_tokens or config.no_repeat_ngram_size:
            raise UnsupportedSampling(
                "pipelined rollouts sample with temperature, top-k, top-p and min-p only: leave repetition_penalty "
                "at 1 and set no suppressed tokens, or set training.pipeline.max_staleness=0"
            )
        self.temperature = config.temperature or 1.0
        warpers: list[Any] = []
        if self.temperature != 1.0:
            warpers.append(TemperatureLogitsWarper(self.temperature))
        if config.top_k:
            warpers.append(TopKLogitsWarper(top_k=config.top_k))
        if config.top_p is not None and config.top_p < 1.0:
            warpers.append(TopPLogitsWarper(top_p=config.top_p))
        if config.min_p is not None:
            warpers.append(MinPLogitsWarper(min_p=config.min_p))
        self.warpers = warpers

    def __call__(self, logits: Any, forced: Any, forced_token: Any) -> tuple[Any, Any]:
        """(token per row, its log-probability) for logits (rows, vocabulary); rows where `forced` is set take
        `forced_token`."""
        import torch

        scores = logits.float()
        logprobs = torch.log_softmax(scores / self.temperature, dim=-1)
        for warper in self.warpers:
            scores = warper(None, scores)
        tokens = torch.multinomial(torch.softmax(scores, dim=-1), 1)[:, 0]
        tokens = torch.where(forced, forced_token, tokens)
        return tokens, logprobs.gather(1, tokens[:, None])[:, 0]


class SlotDecoder:
    """Decodes rows in `slots` slots of one batch; `start` puts a row in a free slot, `step` decodes one token in
    every slot and returns the rows that ended, whose slots are free again.

    `forward` is the model's call for a decode step: the model itself, or its compiled call on a GPU. The device
    state (positions, tokens, what each slot has sampled) stays on the device; with `late_reads` (a GPU) the host
    learns which rows ended one step late, so it never waits for the step it has just queued.
    """

    def __init__(
        self,
        model: Any,
        slots: int,
        budget: int,
        max_cache_len: int,
        eos_token_ids: Sequence[int],
        sampler: Sampler,
        forward: Callable[..., Any] | None = None,
        late_reads: bool = False,
    ) -> None:
        import torch

        self.model = model
        self.slots = slots
        self.budget = budget
        self.sampler = sampler
        self.forward = forward or model
        self.late_reads = late_reads
        device = model.device
        self.cache = slot_cache(model.config, slots, max_cache_len, device)
        self.written, self.by_layer_kind = written_prefix(model.config, self.cache)
        self.eos = torch.tensor(list(eos_token_ids), device=device)
        self.key_positions = torch.arange(max_cache_len, device=device)
        self.tokens = torch.zeros(slots, dtype=torch.long, device=device)
        self.generated = torch.zeros(slots, dtype=torch.long, device=device)
        self.limit = torch.ones(slots, dtype=torch.long, device=device)
        self.stop_at = torch.full((slots,), budget + 1, dtype=torch.long, device=device)
        self.active = torch.zeros(slots, dtype=torch.bool, device=device)
        # One column past the budget: a slot whose row has ended writes its wasted steps there.
        self.out_tokens = torch.zeros(slots, budget + 1, dtype=torch.long, device=device)
        self.out_logprobs = torch.zeros(slots, budget + 1, dtype=torch.float32, device=device)
        self.rows: list[Row | None] = [None] * slots
        self.prefills: dict[tuple[int, ...], tuple[Any, Any]] = {}
        self.pending: tuple[Any, Any] | None = None  # a step's ended flags on the host, and the event they wait on
        self.steps = 0
        self.busy_slot_steps = 0

    # ------------------------------------------------------------------ rows in and out

    def free_slots(self) -> list[int]:
        return [slot for slot, row in enumerate(self.rows) if row is None]

    def in_flight(self) -> list[Row]:
        return [row for row in self.rows if row is not None]

    def weights_changed(self) -> None:
        """The policy's weights changed: a prompt's prefill is computed afresh for the rows that start from now."""
        self.prefills.clear()

    def start(self, slot: int, row: Row) -> Decoded | None:
        """Put `row` in the free `slot`: its prompt's keys, values and states replace the slot's, and its first token
        is sampled. Returns the row at once when that token already ends it."""
        import torch

        assert self.rows[slot] is None, f"slot {slot} is taken"
        if slot_cache_length(len(row.prompt_ids), self.budget) > self.cache.max_cache_len:
            raise ValueError(
                f"a prompt of {len(row.prompt_ids)} tokens and a budget of {self.budget} do not fit the slot cache "
                f"of {self.cache.max_cache_len} positions (it needs one more than both)"
            )
        if row.prompt_ids not in self.prefills:
            self.prefills[row.prompt_ids] = prefill(self.model, row.prompt_ids)
        cache, logits = self.prefills[row.prompt_ids]
        self._copy_into(slot, cache, len(row.prompt_ids))
        stop_at = row.stop_at if row.stop_at is not None else self.budget + 1
        forced = torch.tensor([stop_at <= 1], device=logits.device)
        token, logprob = self.sampler(logits, forced, self.eos[0])
        self.rows[slot] = row
        self.cache.positions[slot] = len(row.prompt_ids)
        self.tokens[slot] = token[0]
        self.out_tokens[slot, 0] = token[0]
        self.out_logprobs[slot, 0] = logprob[0]
        self.generated[slot] = 1
        self.stop_at[slot] = stop_at
        self.limit[slot] = min(self.budget, stop_at)
        ended = bool(torch.isin(token, self.eos)[0]) or min(self.budget, stop_at) <= 1
        self.active[slot] = not ended
        return self._take([slot])[0] if ended else None

    def _copy_into(self, slot: int, cache: Any, length: int) -> None:
        from transformers.cache_utils import LinearAttentionLayer

        for mine, theirs in zip(self.cache.layers, cache.layers, strict=True):
            if isinstance(mine, LinearAttentionLayer):
                conv, recurrent = theirs.conv_states[0], theirs.recurrent_states[0]
                if not mine.is_conv_states_initialized[0]:
                    mine.lazy_initialization(
                        conv_states=conv.expand(self.slots, *conv.shape[1:]),
                        recurrent_states=recurrent.expand(self.slots, *recurrent.shape[1:]),
                    )
                    mine.has_previous_state[0] = True
                states: Any = mine  # transformers types the states as possibly None: they are set above
                states.conv_states[0][slot].copy_(conv[0])
                states.recurrent_states[0][slot].copy_(recurrent[0])
            else:
                if not mine.is_initialized:
                    mine.lazy_initialization(
                        theirs.keys.expand(self.slots, *theirs.keys.shape[1:]),
                        theirs.values.expand(self.slots, *theirs.values.shape[1:]),
                    )
                mine.keys[slot, :, :length].copy_(theirs.keys[0])
                mine.values[slot, :, :length].copy_(theirs.values[0])

    def _take(self, slots: list[int]) -> list[Decoded]:
        """The rows in `slots` as decoded (one read of the device for all of them); their slots are free again."""
        if not slots:
            return []
        lengths = self.generated[slots].tolist()
        tokens = self.out_tokens[slots].tolist()
        logprobs = self.out_logprobs[slots].tolist()
        decoded = []
        for slot, length, ids, logps in zip(slots, lengths, tokens, logprobs, strict=True):
            row = self.rows[slot]
            assert row is not None
            decoded.append(Decoded(row.key, ids[:length], logps[:length]))
            self.rows[slot] = None
        return decoded

    # ------------------------------------------------------------------ decoding

    def step(self) -> list[Decoded]:
        """One decode step of every slot; the rows known to have ended (this step's, or the last one's when the host
        reads late)."""
        import torch

        self.steps += 1
        self.busy_slot_steps += sum(row is not None for row in self.rows)
        positions = self.cache.positions
        # Each slot's written positions, made here rather than inside the (compiled) step: as a block mask for the
        # written-only attention, as sdpa's boolean mask (rows, 1, 1, keys) otherwise. transformers passes a 4D mask
        # to the attention as it is.
        if self.written is not None:
            mask = self.written.update()
        else:
            mask = (self.key_positions[None] <= positions[:, None])[:, None, None, :]
        logits = self.forward(
            input_ids=self.tokens[:, None],
            position_ids=positions[:, None],
            attention_mask={"full_attention": mask, "linear_attention": None} if self.by_layer_kind else mask,
            past_key_values=self.cache,
            use_cache=True,
        ).logits[:, -1]
        active = self.active
        # A free slot's garbage is sampled from the uniform distribution: its logits may have drifted anywhere.
        logits = torch.where(active[:, None], logits, 0)
        tokens, logprobs = self.sampler(logits, self.generated + 1 >= self.stop_at, self.eos[0])
        column = self.generated.clamp(max=self.budget)[:, None]
        self.out_tokens.scatter_(1, column, tokens[:, None])
        self.out_logprobs.scatter_(1, column, logprobs[:, None])
        self.generated += active
        positions += active
        ended = active & (torch.isin(tokens, self.eos) | (self.generated >= self.limit))
        self.active = active & ~ended
        self.tokens = tokens
        if not self.late_reads:
            return self._take([slot for slot, done in enumerate(ended.tolist()) if done])
        flags = ended.to("cpu", non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        previous, self.pending = self.pending, (flags, event)
        return self._read(previous)

    def drain(self) -> list[Decoded]:
        """The rows the last step ended, when the host reads late (nothing otherwise)."""
        previous, self.pending = self.pending, None
        return self._read(previous)

    def _read(self, pending: tuple[Any, Any] | None) -> list[Decoded]:
        if pending is None:
            return []
        flags, event = pending
        event.synchronize()
        return self._take([slot for slot, done in enumerate(flags.tolist()) if done])

    def fill(self) -> float | None:
        """The share of slots that held a row over the steps decoded since the last call (None: no step), and
        starts counting afresh."""
        if not self.steps:
            return None
        share = self.busy_slot_steps / (self.steps * self.slots)
        self.steps, self.busy_slot_steps = 0, 0
        return share


@contextmanager
def decoding(deferred: bool) -> Iterator[None]:
    """No gradient, and with `deferred` (a GPU) the sampling's checks read once at the end
    (`watercolour.policy.generation.multinomial_checked_late`), so no decode step waits for the one before."""
    import torch

    from watercolour.policy.generation import multinomial_checked_late

    with torch.no_grad(), multinomial_checked_late() if deferred else nullcontext():
        yield
