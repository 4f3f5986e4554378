"""The chunked gated delta rule in torch, with few kernels: what the update runs where fla's backward is wrong.

transformers' torch reference of the Gated DeltaNet layers scans the sequence in 64-token chunks, and each chunk
costs about 45 small kernels forward and backward, among them a full-size zero fill and copy for every chunk's slice
of the output (autograd's backward of an indexed read and write). On the recipe's update
(30 such layers, 3-9 thousand tokens a row) that is hundreds of thousands of launches, and one H200 sat 25% busy
through them. This computes the same function with the parts that do not depend on the recurrent state taken out of
the scan:

- the scan carries only the state: per chunk, the correction `v - w S` and the state's update, each one fused
  matmul (`baddbmm`); it is one autograd function (`state_scan`) whose backward is a scan of three kernels a chunk,
  so neither pass records a graph node per chunk, and the inputs' gradients are batched over every chunk after it;
- each chunk's output, the read of the state before it plus the attention inside it, is two batched matmuls over
  every chunk at once after the scan;
- the span of decay between two positions of a chunk is summed as such, not as the difference of two running sums,
  whose cancellation cost transformers' reference about four digits of the per-head decay parameters' gradients
  (`A_log`, `dt_bias`) in float32; the two triangular solves share one call.

It returns what transformers' reference returns, in float32 inside (float64 for float64 inputs). It is checked
against the rule's token-by-token definition in float64, output and gradients, and against transformers' reference
(`tests/policy/test_gated_delta_rule.py`), and through one layer's gradients in bf16 against float32 on the GPU
(`bench/gpu/linear_attention.py`).
"""

from __future__ import annotations

import functools
from typing import Any


# fla's chunk and transformers': the work inside a chunk is the reference's, so no part is slower than it. Longer
# chunks mean fewer kernels (one layer of the 35B-A3B shape at 9,092 tokens, forward and backward: 1,117 aten ops
# at 64, 691 at 128, 475 at 256, against the reference's 6,658) and more work in the triangular solves. 128 is the
# fastest whole update measured: the recipe's 22,190-token group on one H100 took 19.5-20.4 s at 128, 22.8-24.5 s
# at 64 and 24.1 s at 256 (`bash lab/scripts/gpu_prefect.sh install-bench update`, docs/gpu.md).
CHUNK = 128


def chunk_gated_delta_rule(
    query: Any,
    key: Any,
    value: Any,
    g: Any,
    beta: Any,
    chunk_size: int = CHUNK,
    initial_state: Any = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """transformers' `torch_chunk_gated_delta_rule` (same arguments, same result): query and key
    [batch, tokens, key heads, key dim], value [batch, tokens, value heads, value dim], g (log decay, <= 0) and beta
    [batch, tokens, value heads]; returns the output like value and, if asked, the final state
    [batch, value heads, key dim, value dim]."""
    import torch

    # The trainer's bf16 autocast would run the matmuls below in bf16 and hand the scan's backward mixed dtypes:
    # the rule computes in float32 inside whatever the caller's autocast says.
    with torch.autocast(query.device.type, enabled=False):
        return _chunk_gated_delta_rule(
            query, key, value, g, beta, chunk_size, initial_state, output_final_state, use_qk_l2norm_in_kernel
        )


def _chunk_gated_delta_rule(
    query: Any,
    key: Any,
    value: Any,
    g: Any,
    beta: Any,
    chunk_size: int,
    initial_state: Any,
    output_final_state: bool,
    use_qk_l2norm_in_kernel: bool,
) -> tuple[Any, Any]:
    import torch
    import torch.nn.functional as F

    dtype = query.dtype
    batch, tokens, key_heads, key_dim = key.shape
    value_heads, value_dim = value.shape[-2:]
    if key_heads != value_heads:  # each query/key head serves consecutive value heads
        query = query.repeat_interleave(value_heads // key_heads, dim=2)
        key = key.repeat_interleave(value_heads // key_heads, dim=2)
    inside_dtype = torch.promote_types(dtype, torch.float32)  # float32, or float64 for a check against the definition
    query, key, value, beta, g = (x.transpose(1, 2).to(inside_dtype) for x in (query, key, value, beta, g))
    if use_qk_l2norm_in_kernel:
        query = query * torch.rsqrt((query * query).sum(-1, keepdim=True) + 1e-6)
        key = key * torch.rsqrt((key * key).sum(-1, keepdim=True) + 1e-6)
    query = query * key_dim**-0.5

    chunk_size = min(chunk_size, tokens)  # a prompt shorter than a chunk is one chunk, unpadded
    pad = (chunk_size - tokens % chunk_size) % chunk_size
    query, key, value = (F.pad(x, (0, 0, 0, pad)) for x in (query, key, value))
    beta, g = (F.pad(x, (0, pad)) for x in (beta, g))
    heads = batch * value_heads
    chunks = (tokens + pad) // chunk_size
    # [batch * heads, chunks, chunk, dim]: one matrix per head and chunk for the batched matmuls below.
    query, key, value = (x.reshape(heads, chunks, chunk_size, x.shape[-1]) for x in (query, key, value))
    beta = beta.reshape(heads, chunks, chunk_size, 1)
    g = g.reshape(heads, chunks, chunk_size)
    decay = g.cumsum(-1)  # log decay from the chunk's start to each position
    # log decay from position j to position i of a chunk (i >= j): the sum of g over (j, i], summed as such rather
    # than as decay[i] - decay[j], whose cancellation costs the per-head decay parameters' gradients precision.
    later = torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=query.device).triu(1)
    steps = g.unsqueeze(-1).expand(-1, -1, -1, chunk_size).masked_fill(~later.T.tril(-1), 0.0)
    pairwise = steps.cumsum(-2).masked_fill(later, float("-inf")).exp()
    k_beta = key * beta
    # The UT transform: one unit lower-triangular solve for the chunk's new values and its decayed keys together.
    solved = torch.linalg.solve_triangular(
        (k_beta @ key.transpose(-1, -2)) * pairwise,
        torch.cat([value * beta, k_beta * decay.exp().unsqueeze(-1)], dim=-1),
        upper=False,
        unitriangular=True,
    )
    new_values, decayed_keys = solved.split([value_dim, key_dim], dim=-1)
    inside = (query @ key.transpose(-1, -2)) * pairwise
    query = query * decay.exp().unsqueeze(-1)
    key_to_end = (key * pairwise[..., -1, :].unsqueeze(-1)).transpose(-1, -2)  # decayed to the chunk's end
    chunk_decay = decay[..., -1].exp()[..., None, None]

    state = (
        torch.zeros(heads, key_dim, value_dim, dtype=inside_dtype, device=query.device)
        if initial_state is None
        else initial_state.to(inside_dtype).reshape(heads, key_dim, value_dim)
    )
    states, corrections, state = state_scan().apply(new_values, decayed_keys, key_to_end, chunk_decay, state)
    out = query @ states + inside @ corrections
    out = out.reshape(batch, value_heads, chunks * chunk_size, value_dim)[:, :, :tokens]
    final = state.reshape(batch, value_heads, key_dim, value_dim) if output_final_state else None
    return out.transpose(1, 2).to(dtype, memory_format=torch.contiguous_format), final


@functools.cache
def state_scan() -> Any:
    """The scan over chunks as one autograd function, so that neither pass records a graph node per chunk.

    Forward, per chunk i: the correction c_i = u_i - w_i S_i, then S_{i+1} = d_i S_i + k_i c_i (three kernels).
    Backward, per chunk from the last: the correction's gradient k_i^T G_{i+1} plus what the output sends it, then
    G_i = d_i G_{i+1} - w_i^T (that gradient) plus what the output sends S_i (three kernels). The gradients of u, w,
    k and d need only the G's, the states and the corrections, so they are batched matmuls over every chunk after
    the loop. Returns every chunk's starting state and correction, stacked on dim 1, and the final state.
    """
    import torch
    from torch.autograd.function import once_differentiable

    class StateScan(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, u: Any, w: Any, k: Any, d: Any, state: Any) -> Any:
            states, corrections = [], []
            for u_i, w_i, k_i, d_i in zip(u.unbind(1), w.unbind(1), k.unbind(1), d.unbind(1), strict=True):
                states.append(state)
                correction = torch.baddbmm(u_i, w_i, state, alpha=-1.0)  # what the state does not predict
                state = torch.baddbmm(state * d_i, k_i, correction)
                corrections.append(correction)
            stacked_states, stacked_corrections = torch.stack(states, 1), torch.stack(corrections, 1)
            ctx.save_for_backward(w, k, d, stacked_states, stacked_corrections)
            return stacked_states, stacked_corrections, state

        @staticmethod
        @once_differentiable
        def backward(ctx: Any, grad_states: Any, grad_corrections: Any, grad_final: Any) -> Any:
            w, k, d, states, corrections = ctx.saved_tensors
            grad_state = grad_final
            later_grads, correction_grads = [], []
            for i in reversed(range(states.shape[1])):
                later_grads.append(grad_state)  # the loss's gradient with respect to S_{i+1}
                correction_grad = torch.baddbmm(grad_corrections[:, i], k[:, i].transpose(-1, -2), grad_state)
                correction_grads.append(correction_grad)
                grad_state = torch.addcmul(grad_states[:, i], grad_state, d[:, i])
                grad_state = torch.baddbmm(grad_state, w[:, i].transpose(-1, -2), correction_grad, alpha=-1.0)
            later = torch.stack(later_grads[::-1], 1)
            grad_u = torch.stack(correction_grads[::-1], 1)
            grad_w = torch.matmul(grad_u, states.transpose(-1, -2)).neg_()
            grad_k = torch.matmul(later, corrections.transpose(-1, -2))
            grad_d = (later * states).sum((-2, -1), keepdim=True)
            return grad_u, grad_w, grad_k, grad_d, grad_state

    return StateScan
