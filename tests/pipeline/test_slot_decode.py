"""The slot decoder: rows started in the slots earlier rows freed decode exactly as each would alone, keep the
log-probability the update computes for every token, and the decode step compiles whole."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from watercolour.pipeline.slot_decode import Decoded, Row, Sampler, SlotDecoder, UnsupportedSampling, decoding
from watercolour.policy.attention import use_packed_gqa
from watercolour.rehearsal.shapes import build_model, shape_tokenizer


SLOTS = 3
BUDGET = 24
CACHE = 64
# More rows than slots, ending at different lengths: every slot is reused, at different times.
STOPS = (5, 17, 9, 24, 3, 12, 20, 7)
GREEDY = GenerationConfig(do_sample=True, top_k=1)


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return shape_tokenizer()


def policy(kind: str, tokenizer: Any) -> Any:
    """A random Llama (full attention only), or Qwen3.5 MoE's kinds of layer in miniature (Gated DeltaNet and full
    attention, routed experts)."""
    torch.manual_seed(0)
    if kind == "qwen3.5-moe":
        return build_model("tiny-qwen3.5-moe", tokenizer, "cpu", torch.float32).eval()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config).eval()


def prompts(tokenizer: Any) -> list[tuple[int, ...]]:
    """Prompts of five lengths, so slots hold rows at different positions."""
    return [tuple(tokenizer(f"paint a peach hibiscus {'wet ' * extra}")["input_ids"]) for extra in range(5)]


def decode_all(decoder: SlotDecoder, rows: list[Row], deferred: bool = False) -> dict[Any, Decoded]:
    """Every row through the decoder, each started in the first free slot as soon as there is one."""
    queue, done = list(rows), {}
    with decoding(deferred):
        while len(done) < len(rows):
            for slot in decoder.free_slots():
                if queue and (finished := decoder.start(slot, queue.pop(0))) is not None:
                    done[finished.key] = finished
            for finished in decoder.step():
                done[finished.key] = finished
        for finished in decoder.drain():
            done[finished.key] = finished
    return done


def alone_logprobs(model: Any, row: Row, decoded: Decoded, temperature: float) -> Any:
    """The update's own computation for the row alone (TRL's `_get_per_token_logps_and_entropies`): the logits over
    the temperature, before top-k and top-p, at each completion token."""
    sequence = torch.tensor([list(row.prompt_ids) + decoded.token_ids])
    with torch.no_grad():
        logits = model(sequence).logits[0, len(row.prompt_ids) - 1 : -1] / temperature
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(decoded.token_ids)[:, None])[:, 0]


@pytest.mark.parametrize("attention", ["sdpa", "written-only"])
@pytest.mark.parametrize("kind", ["llama", "qwen3.5-moe"])
def test_a_row_in_a_reused_slot_decodes_as_it_would_alone(kind: str, attention: str, tokenizer: Any) -> None:
    """Through sdpa's mask, and through the written-only attention's block mask (`WrittenPrefix`, made outside the
    step) as a GPU run attends."""
    model = policy(kind, tokenizer)
    if attention == "written-only":
        use_packed_gqa(model, written_only=True)
    eos = tokenizer.eos_token_id
    decoder = SlotDecoder(model, SLOTS, BUDGET, CACHE, [eos], Sampler(GREEDY))
    assert (decoder.written is not None) == (attention == "written-only")
    rows = [Row(number, prompts(tokenizer)[number % 5], stop) for number, stop in enumerate(STOPS)]
    done = decode_all(decoder, rows)

    for row in rows:
        alone = model.generate(
            torch.tensor([list(row.prompt_ids)]),
            do_sample=False,
            max_new_tokens=row.stop_at - 1,
            eos_token_id=None,
            pad_token_id=tokenizer.pad_token_id,
        )[0, len(row.prompt_ids) :].tolist()
        # Greedy decoding alone, then the end token where the row was told to stop.
        assert done[row.key].token_ids == [*alone, eos], f"row {row.key}"
        # And every token's log-probability as a forward of this row alone gives it: nothing of the slot's earlier
        # rows (keys, values, Gated DeltaNet states) reached it.
        assert torch.allclose(torch.tensor(done[row.key].logprobs), alone_logprobs(model, row, done[row.key], 1.0))
    # Eight rows went through three slots: most slots held several rows, one after another.
    assert 0.5 < decoder.fill() < 1.0


@pytest.mark.parametrize("kind", ["llama", "qwen3.5-moe"])
def test_each_sampled_token_keeps_the_log_probability_the_update_computes(kind: str, tokenizer: Any) -> None:
    model = policy(kind, tokenizer)
    # Top-k and top-p change what is drawn, not the log-probability the update computes.
    sampling = GenerationConfig(do_sample=True, temperature=0.7, top_k=20, top_p=0.9)
    decoder = SlotDecoder(model, SLOTS, BUDGET, CACHE, [tokenizer.eos_token_id], Sampler(sampling))
    torch.manual_seed(1)
    rows = [Row(number, prompts(tokenizer)[number % 5], stop) for number, stop in enumerate(STOPS)]
    done = decode_all(decoder, rows)

    for row in rows:
        decoded = done[row.key]
        expected = alone_logprobs(model, row, decoded, 0.7)
        assert torch.allclose(torch.tensor(decoded.logprobs), expected, atol=1e-4), f"row {row.key}"


def test_a_row_ends_at_its_end_token_or_its_budget(tokenizer: Any) -> None:
    model = policy("llama", tokenizer)
    # Greedy decoding of this prompt never writes the end token within the budget: the budget ends the row.
    prompt = prompts(tokenizer)[0]
    decoder = SlotDecoder(model, 1, BUDGET, CACHE, [tokenizer.eos_token_id], Sampler(GREEDY))
    (unbounded,) = decode_all(decoder, [Row("budget", prompt)]).values()
    assert len(unbounded.token_ids) == BUDGET and tokenizer.eos_token_id not in unbounded.token_ids
    # Told that the token it writes fourth is an end token, the decoder ends the row where it first writes it.
    end = unbounded.token_ids[3]
    decoder = SlotDecoder(model, 1, BUDGET, CACHE, [tokenizer.eos_token_id, end], Sampler(GREEDY))
    (ended,) = decode_all(decoder, [Row("end token", prompt)]).values()
    assert ended.token_ids == unbounded.token_ids[: unbounded.token_ids.index(end) + 1]


@pytest.mark.slow
@pytest.mark.parametrize("written_only", [False, True])
def test_the_decode_step_compiles_whole_over_the_slot_cache(written_only: bool, tokenizer: Any) -> None:
    model = policy("qwen3.5-moe", tokenizer)
    use_packed_gqa(model, written_only=written_only)
    # fullgraph: a graph break anywhere in the step (the slot cache's writes, the masks, the Gated DeltaNet states)
    # fails here instead of silently splitting the step a GPU runs as one CUDA graph.
    compiled = torch.compile(model.__call__, backend="aot_eager", fullgraph=True, dynamic=False)
    rows = [Row(number, prompts(tokenizer)[number % 5], stop) for number, stop in enumerate(STOPS[:4])]
    eager = decode_all(SlotDecoder(model, 2, BUDGET, CACHE, [tokenizer.eos_token_id], Sampler(GREEDY)), rows)
    traced = decode_all(
        SlotDecoder(model, 2, BUDGET, CACHE, [tokenizer.eos_token_id], Sampler(GREEDY), forward=compiled), rows
    )
    assert {key: row.token_ids for key, row in traced.items()} == {key: row.token_ids for key, row in eager.items()}


def reference_attention(query: Any, key: Any, value: Any, positions: Any) -> Any:
    """sdpa over each row's keys 0 .. positions[row], the key/value heads repeated for the query heads."""
    groups = query.shape[1] // key.shape[1]
    mask = (torch.arange(key.shape[2])[None] <= positions[:, None])[:, None, None, :]
    return torch.nn.functional.scaled_dot_product_attention(
        query, key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1), attn_mask=mask
    )


@pytest.mark.slow
def test_the_written_prefix_block_mask_follows_the_positions_it_is_made_from() -> None:
    """Blocks wholly written are full, the block a row is writing is partial, the rest are skipped; and a compiled
    FlexAttention (Inductor, which reads the block counts: eager FlexAttention ignores them) attends as sdpa does
    over each row's written positions, step after step as the positions move in place, with no recompilation."""
    from torch.nn.attention.flex_attention import flex_attention

    from watercolour.policy.attention import KV_BLOCK, WrittenPrefix

    keys = 3 * KV_BLOCK
    positions = torch.tensor([5, KV_BLOCK - 2, KV_BLOCK - 1, 2 * KV_BLOCK - 2, keys - 3])
    prefix = WrittenPrefix(positions, keys)
    assert prefix.mask.to_dense()[:, 0, 0].tolist() == [[1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert prefix.mask.full_kv_num_blocks.view(-1).tolist() == [0, 0, 1, 1, 2]
    assert prefix.mask.kv_num_blocks.view(-1).tolist() == [1, 1, 0, 1, 1]

    torch.manual_seed(0)
    query, key, value = torch.randn(5, 4, 1, 16), torch.randn(5, 2, keys, 16), torch.randn(5, 2, keys, 16)
    torch._dynamo.reset()
    compiled = torch.compile(flex_attention, dynamic=False)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for _ in range(3):
            expected = reference_attention(query, key, value, positions)
            got = compiled(query, key, value, block_mask=prefix.update(), enable_gqa=True)
            assert torch.allclose(got, expected, atol=1e-5), positions.tolist()
            positions += torch.tensor([1, 1, 1, 1, 0])  # rows cross into the next block; the last one idles
    # The counts are what the kernel reads: wrong ones give another answer.
    prefix.full_counts.zero_()
    wrong = compiled(query, key, value, block_mask=prefix.mask, enable_gqa=True)
    assert not torch.allclose(wrong, reference_attention(query, key, value, positions), atol=1e-3)


def test_a_prompt_and_budget_that_fill_the_slot_cache_are_refused(tokenizer: Any) -> None:
    """An ended row's slot goes on writing one position past its last token: the cache must hold it."""
    model = policy("llama", tokenizer)
    prompt = prompts(tokenizer)[0]
    decoder = SlotDecoder(model, 1, CACHE - len(prompt), CACHE, [tokenizer.eos_token_id], Sampler(GREEDY))
    with pytest.raises(ValueError, match="do not fit the slot cache"):
        decoder.start(0, Row("full", prompt))


def test_sampling_the_decoder_does_not_apply_is_refused() -> None:
    with pytest.raises(UnsupportedSampling, match="max_staleness=0"):
        Sampler(GenerationConfig(do_sample=True, repetition_penalty=1.1))


def long_prompts(tokenizer: Any) -> list[tuple[int, ...]]:
    """Prompts whose rows cross the written-only attention's blocks of 128 positions as they decode."""
    return [tuple(tokenizer(f"paint a peach hibiscus {'wet ' * extra}")["input_ids"]) for extra in (16, 34, 38, 76)]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("written_only", [False, True])
def test_the_compiled_decode_step_with_late_reads_decodes_as_the_eager_one(written_only: bool, tokenizer: Any) -> None:
    """On a GPU as a pipelined run decodes: the compiled step (CUDA graphs), the packed or the written-only attention
    (FlexAttention over `WrittenPrefix`'s block mask), the host reading which rows ended one step late."""
    from transformers import CompileConfig

    from watercolour.policy.attention import KV_BLOCK

    model = build_model("tiny-qwen3.5-moe", tokenizer, "cuda", torch.float32).eval()
    use_packed_gqa(model, written_only=written_only)
    # Compiled in float32 (so tokens compare exactly), transformers' grouped experts fall back to a loop that reads
    # their offsets on the host, which a CUDA graph cannot capture; its batched experts have fixed shapes.
    model.set_experts_implementation("batched_mm")
    compiled = model.get_compiled_call(CompileConfig(fullgraph=False, dynamic=False, mode="reduce-overhead"))
    cache = 3 * KV_BLOCK
    rows = [Row(number, long_prompts(tokenizer)[number % 4], stop) for number, stop in enumerate(STOPS)]
    eager = decode_all(SlotDecoder(model, SLOTS, BUDGET, cache, [tokenizer.eos_token_id], Sampler(GREEDY)), rows)
    fast = SlotDecoder(
        model, SLOTS, BUDGET, cache, [tokenizer.eos_token_id], Sampler(GREEDY), forward=compiled, late_reads=True
    )
    assert (fast.written is not None) == written_only
    done = decode_all(fast, rows, deferred=True)
    assert {key: row.token_ids for key, row in done.items()} == {key: row.token_ids for key, row in eager.items()}
