"""Grouped-query attention in a compiled decode step, without repeating the keys and values per query head.

transformers' sdpa path packs a decode step's grouped queries onto their key/value heads (`pack_gqa`), but not
while torch.compile traces it: there it falls back to `repeat_kv`, which expands every layer's cached keys and
values n-fold before the kernel (4x for Qwen3-4B, 8x for Qwen3.5-35B-A3B). On the H200 that expansion and the
attention over it were the largest part of the Qwen3-4B compiled decode step (docs/gpu.md, the decode
profile). This attention function is transformers' sdpa function with the packing kept under compilation; the
training forward (more than one query position) goes through the stock function unchanged.

It is registered with transformers' attention and mask interfaces under its own name, so a model opts in through
its config (`use_packed_gqa`) and its masks are built exactly as for sdpa.
"""

from __future__ import annotations

from typing import Any


PACKED_GQA = "sdpa_packed_gqa"


def packed_gqa_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    import torch
    from transformers.integrations.sdpa_attention import pack_gqa, sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    decoding = query.shape[2] == 1 and groups > 1 and kwargs.get("position_bias") is None
    if not decoding or kwargs.get("cache") is not None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    # One query token: (batch, heads, 1, dim) -> (batch, kv_heads, groups, dim), so the groups of a key/value head
    # read it once, as consecutive query rows. A mask shared by all heads (batch, 1, 1, keys) broadcasts as it is.
    packed = pack_gqa(query, groups)
    assert packed is not None
    output = torch.nn.functional.scaled_dot_product_attention(
        packed,
        key,
        value,
        attn_mask=pack_gqa(attention_mask, groups),
        dropout_p=dropout,
        scale=scaling,
        is_causal=False,
    )
    output = output.reshape(output.shape[0], -1, 1, value.shape[-1])
    return output.transpose(1, 2).contiguous(), None


def register() -> None:
    """Make the function known to transformers (idempotent): attention by its name, masks as sdpa's."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface, sdpa_mask

    if PACKED_GQA not in ALL_MASK_ATTENTION_FUNCTIONS._global_mapping:
        AttentionInterface.register(PACKED_GQA, packed_gqa_attention)
        AttentionMaskInterface.register(PACKED_GQA, sdpa_mask)


def use_packed_gqa(model: Any) -> list[str]:
    """Switch every (sub)config of `model` that attends with sdpa to the packed function; returns which switched.

    Other implementations (flash attention, eager) are left alone: they do not repeat keys and values this way, or
    were chosen on purpose. Each config is switched on its own (the public setter would also overwrite every
    sub-config's choice).
    """
    register()
    pending = [model.config, *(getattr(module, "config", None) for module in model.modules())]
    seen: set[int] = set()
    switched = []
    while pending:
        config = pending.pop()
        if config is None or id(config) in seen:
            continue
        seen.add(id(config))
        pending.extend(getattr(config, name, None) for name in getattr(config, "sub_configs", {}))
        if getattr(config, "_attn_implementation_internal", None) == "sdpa":
            config._attn_implementation_internal = PACKED_GQA
            switched.append(type(config).__name__)
    return sorted(switched)
