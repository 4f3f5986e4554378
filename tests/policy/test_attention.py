"""Packed grouped-query attention in a compiled decode step: the same values, without the repeated keys; and
attention over the written cache blocks only: the same values, without reading the blocks nothing was written to."""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import SimpleNamespace

import pytest
import torch
from transformers import LlamaConfig, Qwen3Config, Qwen3ForCausalLM
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from watercolour.policy.attention import (
    KV_BLOCK,
    PACKED_GQA,
    WRITTEN_ONLY,
    packed_gqa_attention,
    use_packed_gqa,
    written_blocks,
    written_only_attention,
)


BATCH, HEADS, KV_HEADS, KEYS, DIM = 3, 8, 2, 40, 16


def decode_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    query = torch.randn(BATCH, HEADS, 1, DIM)
    key, value = torch.randn(BATCH, KV_HEADS, KEYS, DIM), torch.randn(BATCH, KV_HEADS, KEYS, DIM)
    mask = torch.ones(BATCH, 1, 1, KEYS, dtype=torch.bool)
    mask[0, ..., :7] = False  # a left-padded row
    mask[:, ..., 30:] = False  # static-cache slots not written yet
    return query, key, value, mask


def traced_shapes(attention) -> tuple[torch.Tensor, list[torch.Size]]:
    """The attention's output under torch.compile (dynamo traces it, as in a compiled decode step), and the shapes
    of every tensor in the traced graph."""
    shapes: list[torch.Size] = []

    def backend(graph, example_inputs):
        for node in graph.graph.nodes:
            value = node.meta.get("example_value")
            if isinstance(value, torch.Tensor):
                shapes.append(value.shape)
        return graph.forward

    module = SimpleNamespace(num_key_value_groups=HEADS // KV_HEADS, is_causal=True)
    query, key, value, mask = decode_inputs()

    def run(query, key, value, mask):
        return attention(module, query, key, value, mask, scaling=DIM**-0.5)[0]

    torch._dynamo.reset()
    return torch.compile(run, backend=backend, fullgraph=True)(query, key, value, mask), shapes


def test_compiled_decode_attends_without_repeating_the_grouped_keys_and_gives_the_same_values() -> None:
    stock, stock_shapes = traced_shapes(sdpa_attention_forward)
    packed, packed_shapes = traced_shapes(packed_gqa_attention)
    torch.testing.assert_close(packed, stock, rtol=1e-5, atol=1e-6)
    repeated = torch.Size([BATCH, HEADS, KEYS, DIM])
    assert repeated in stock_shapes  # transformers' sdpa path expands the cache per query head under compilation
    assert repeated not in packed_shapes


def test_a_training_forward_goes_through_the_stock_sdpa_function() -> None:
    torch.manual_seed(1)
    module = SimpleNamespace(num_key_value_groups=HEADS // KV_HEADS, is_causal=True)
    query = torch.randn(BATCH, HEADS, 12, DIM)
    key, value = torch.randn(BATCH, KV_HEADS, 12, DIM), torch.randn(BATCH, KV_HEADS, 12, DIM)
    assert torch.equal(
        packed_gqa_attention(module, query, key, value, None)[0],
        sdpa_attention_forward(module, query, key, value, None)[0],
    )


def assert_same_generation(switch: Callable[[torch.nn.Module], list[str]], **extra: object) -> None:
    """A tiny Qwen3 decodes greedily with a static cache, stock and switched by `switch`: the same tokens and logits."""
    torch.manual_seed(0)
    config = Qwen3Config(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
        head_dim=16, vocab_size=300, max_position_embeddings=512,
    )  # fmt: skip
    stock = Qwen3ForCausalLM(config).eval()
    switched = copy.deepcopy(stock)
    assert switch(switched) == ["Qwen3Config"]
    ids = torch.randint(0, 300, (3, 20))
    mask = torch.ones_like(ids)
    mask[0, :5] = 0
    settings = dict(max_new_tokens=12, do_sample=False, cache_implementation="static", output_logits=True)
    with torch.no_grad():
        a = stock.generate(ids, attention_mask=mask, return_dict_in_generate=True, **settings)
        b = switched.generate(ids, attention_mask=mask, return_dict_in_generate=True, **settings, **extra)
    assert torch.equal(a.sequences, b.sequences)
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(a.logits, b.logits, strict=True))


def test_generation_with_packed_attention_samples_the_same_tokens() -> None:
    assert_same_generation(use_packed_gqa)


def test_written_only_attention_gives_the_packed_values_and_lists_only_the_written_blocks() -> None:
    torch.manual_seed(2)
    keys = 3 * KV_BLOCK + 44  # a cache that does not end on a whole block
    query = torch.randn(BATCH, HEADS, 1, DIM)
    key, value = torch.randn(BATCH, KV_HEADS, keys, DIM), torch.randn(BATCH, KV_HEADS, keys, DIM)
    mask = torch.zeros(BATCH, 1, 1, keys, dtype=torch.bool)
    mask[0, ..., 9 : KV_BLOCK + 20] = True  # left padding, then written up to inside the second block
    mask[1, ..., : 2 * KV_BLOCK] = True  # exactly two whole blocks
    mask[2, ..., KV_BLOCK + 5 : 3 * KV_BLOCK + 1] = True  # a long left padding; one position into the fourth block
    module = SimpleNamespace(num_key_value_groups=HEADS // KV_HEADS, is_causal=True)
    expected = packed_gqa_attention(module, query, key, value, mask, scaling=DIM**-0.5)[0]
    eager = written_only_attention(module, query, key, value, mask, scaling=DIM**-0.5)[0]
    torch.testing.assert_close(eager, expected, rtol=1e-5, atol=1e-6)

    def step(query, key, value, mask):
        return written_only_attention(module, query, key, value, mask, scaling=DIM**-0.5)[0]

    torch._dynamo.reset()
    traced = torch.compile(step, backend="aot_eager", fullgraph=True)(query, key, value, mask)
    torch.testing.assert_close(traced, expected, rtol=1e-5, atol=1e-6)
    blocks = written_blocks(mask)
    # Partial blocks get the mask evaluated, full blocks do not; a block with nothing written is not listed.
    assert blocks.kv_num_blocks.flatten().tolist() == [2, 0, 2]
    assert blocks.full_kv_num_blocks.flatten().tolist() == [0, 2, 1]
    assert blocks.kv_indices[0, 0, 0, :2].tolist() == [0, 1]
    assert blocks.kv_indices[2, 0, 0, :2].tolist() == [1, 3]
    assert blocks.full_kv_indices[1, 0, 0, :2].tolist() == [0, 1]
    assert blocks.full_kv_indices[2, 0, 0, :1].tolist() == [2]


def test_generation_with_written_only_attention_samples_the_same_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    import watercolour.policy.attention as attention

    masks: list[tuple[int, ...]] = []

    def seen(mask: torch.Tensor, block: int = KV_BLOCK) -> object:
        masks.append(tuple(mask.shape))
        return written_blocks(mask, block)

    monkeypatch.setattr(attention, "written_blocks", seen)

    def written_only(model: torch.nn.Module) -> list[str]:
        switched = use_packed_gqa(model, written_only=True)
        assert model.config._attn_implementation == WRITTEN_ONLY
        return switched

    assert_same_generation(written_only, max_cache_len=256)
    # Every decode step after the prompt's (11 of them) went through the block mask, in both layers.
    assert masks == [(3, 1, 1, 256)] * 11 * 2


def test_only_sdpa_configs_are_switched() -> None:
    model = Qwen3ForCausalLM(
        Qwen3Config(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, head_dim=8)
    )
    model.config._attn_implementation_internal = "eager"
    assert use_packed_gqa(model) == []
    assert model.config._attn_implementation == "eager"
    assert LlamaConfig()._attn_implementation != PACKED_GQA
