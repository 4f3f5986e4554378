"""Grouped-query attention in a compiled decode step, without repeating the keys and values per query head.

transformers' sdpa path packs a decode step's grouped queries onto their key/value heads (`pack_gqa`), but not
while torch.compile traces it: there it falls back to `repeat_kv`, which expands every layer's cached keys and
values n-fold before the kernel (4x for Qwen3-4B, 8x for Qwen3.5-35B-A3B). On the H200 that expansion and the
attention over it were the largest part of the Qwen3-4B compiled decode step (docs/gpu.md, the decode
profile). This attention function is transformers' sdpa function with the packing kept under compilation; the
training forward (more than one query position) goes through the stock function unchanged.

It is registered with transformers' attention and mask interfaces under its own name, so a model opts in through
its config (`use_packed_gqa`) and its masks are built exactly as for sdpa.

`WRITTEN_ONLY` goes one step further for a decode step: a static cache has room for the whole budget (9,100
positions at the recipe's 8,192 tokens) while a row has written 1-4 thousand, and sdpa's kernels read every
position the mask then discards (7.2 of the 35B-A3B step's 20 ms of GPU time, docs/gpu.md). It runs the step
through FlexAttention with a block mask built from the sdpa mask inside the step: blocks of 128 positions that
the mask leaves wholly empty are skipped by the kernel, which reads the block counts from device memory, so the
compiled step keeps one CUDA graph for every length.
"""

from __future__ import annotations

from typing import Any


PACKED_GQA = "sdpa_packed_gqa"
WRITTEN_ONLY = "sdpa_written_only"
# Key positions per block of the written-only block mask (FlexAttention's default sparse block).
KV_BLOCK = 128


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


def written_blocks(mask: Any, block: int = KV_BLOCK) -> Any:
    """A FlexAttention block mask for one query position from sdpa's boolean mask (batch, 1, 1, keys): blocks the
    mask fills are full (no mask evaluated), blocks it touches are partial, the rest are never read."""
    import torch
    from torch.nn.attention.flex_attention import BlockMask

    batch, keys = mask.shape[0], mask.shape[-1]
    count = -(-keys // block)
    # Padded to whole blocks, so the mask function never indexes past the end of what it reads.
    allowed = torch.nn.functional.pad(mask.reshape(batch, keys), (0, count * block - keys), value=False)
    blocks = allowed.view(batch, count, block)
    full = blocks.all(-1)
    partial = blocks.any(-1) & ~full

    def listed(chosen: Any) -> tuple[Any, Any]:
        counts = chosen.sum(-1, dtype=torch.int32)[:, None, None]
        order = torch.argsort((~chosen).to(torch.int8), dim=-1, stable=True).to(torch.int32)
        return counts, order[:, None, None, :]

    def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
        return allowed[b, kv]

    partial_counts, partial_order = listed(partial)
    full_counts, full_order = listed(full)
    return BlockMask.from_kv_blocks(
        partial_counts,
        partial_order,
        full_counts,
        full_order,
        BLOCK_SIZE=block,
        mask_mod=mask_mod,
        seq_lengths=(1, keys),
    )


class WrittenPrefix:
    """The block mask of a decode step whose rows have each written the cache positions 0 to `positions[row]` (the
    slot decoder's rows, started at different times), over a cache of `keys` positions.

    Built once; `update` rewrites its block counts in place from `positions` before each step, and its mask function
    reads `positions` where they are. So a compiled step takes it as an input of fixed shapes and addresses, and
    nothing of it is computed inside the step: torch 2.11's Inductor fused the computation of a mask made inside the
    step into FlexAttention's kernel and failed to compile it (a NameError in the generated code, on an H100).
    """

    def __init__(self, positions: Any, keys: int, block: int = KV_BLOCK) -> None:
        import torch
        from torch.nn.attention.flex_attention import BlockMask

        rows, device = positions.shape[0], positions.device
        self.positions, self.block, self.count = positions, block, -(-keys // block)
        # Full blocks are 0 .. n-1 of each row, the one partial block (if any) is n.
        order = torch.arange(self.count, dtype=torch.int32, device=device).expand(rows, 1, 1, -1).contiguous()
        zeros = torch.zeros(rows, 1, 1, dtype=torch.int32, device=device)

        def mask_mod(b: Any, h: Any, q: Any, kv: Any) -> Any:
            return kv <= positions[b]

        self.mask = BlockMask.from_kv_blocks(
            zeros.clone(),
            order.clone(),
            zeros.clone(),
            order,
            BLOCK_SIZE=block,
            mask_mod=mask_mod,
            seq_lengths=(1, keys),
        )
        # The mask's own tensors change in place, where a compiled step reads them.
        full_counts = self.mask.full_kv_num_blocks
        assert full_counts is not None
        self.partial_counts, self.partial_order, self.full_counts = (
            self.mask.kv_num_blocks,
            self.mask.kv_indices,
            full_counts,
        )
        if device.type != "cpu":
            for tensor in (self.partial_counts, self.partial_order, self.full_counts):
                torch._dynamo.mark_static_address(tensor)
        self.update()

    def update(self) -> Any:
        """The mask for the positions as they are now."""
        import torch

        written = self.positions + 1
        full = torch.div(written, self.block, rounding_mode="floor").clamp(max=self.count).to(torch.int32)
        self.full_counts.copy_(full.view(-1, 1, 1))
        self.partial_counts.copy_((written % self.block != 0).to(torch.int32).view(-1, 1, 1))
        self.partial_order[:, 0, 0, 0].copy_(full.clamp(max=self.count - 1))
        return self.mask


def written_only_attention(
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
    """A decode step's attention over the key blocks its mask allows (FlexAttention); anything else as packed. The
    mask is sdpa's boolean one, or a block mask already made (`WrittenPrefix`)."""
    import torch
    from torch.nn.attention.flex_attention import BlockMask, flex_attention

    if isinstance(attention_mask, BlockMask):
        output = flex_attention(
            query, key, value, block_mask=attention_mask, scale=scaling, enable_gqa=query.shape[1] != key.shape[1]
        )
        return output.transpose(1, 2).contiguous(), None

    plain = not dropout and not any(kwargs.get(name) is not None for name in ("position_bias", "cache", "s_aux"))
    masked = attention_mask is not None and attention_mask.dtype == torch.bool and attention_mask.shape[-2] == 1
    if query.shape[2] != 1 or not plain or not masked or kwargs.get("softcap"):
        return packed_gqa_attention(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    output = flex_attention(
        query,
        key,
        value,
        block_mask=written_blocks(attention_mask),
        scale=scaling,
        enable_gqa=query.shape[1] != key.shape[1],
    )
    return output.transpose(1, 2).contiguous(), None


def register() -> None:
    """Make the functions known to transformers (idempotent): attention by their names, masks as sdpa's."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface, sdpa_mask

    for name, function in ((PACKED_GQA, packed_gqa_attention), (WRITTEN_ONLY, written_only_attention)):
        if name not in ALL_MASK_ATTENTION_FUNCTIONS._global_mapping:
            AttentionInterface.register(name, function)
            AttentionMaskInterface.register(name, sdpa_mask)


def use_packed_gqa(model: Any, written_only: bool = False) -> list[str]:
    """Switch every (sub)config of `model` that attends with sdpa to the packed function (or, `written_only`, the
    function that also skips the cache's unwritten blocks in a decode step); returns which switched.

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
            config._attn_implementation_internal = WRITTEN_ONLY if written_only else PACKED_GQA
            switched.append(type(config).__name__)
    return sorted(switched)
