"""The project's chunked gated delta rule computes the delta rule's definition, token by token, and its gradients."""

from __future__ import annotations

import copy
import functools

import pytest
import torch
from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as modeling

from bench.gpu import linear_attention as check
from watercolour.policy.gated_delta_rule import chunk_gated_delta_rule


def definition(query, key, value, g, beta, state):
    """The gated delta rule one token at a time: decay the state, write the part of the value it does not predict,
    read it with the query (keys and queries l2-normalised, the query scaled by the key dim's root)."""
    repeat = value.shape[2] // key.shape[2]
    query, key = query.repeat_interleave(repeat, 2), key.repeat_interleave(repeat, 2)
    query = query * torch.rsqrt((query * query).sum(-1, keepdim=True) + 1e-6) * query.shape[-1] ** -0.5
    key = key * torch.rsqrt((key * key).sum(-1, keepdim=True) + 1e-6)
    outputs = []
    for t in range(query.shape[1]):
        state = state * g[:, t].exp()[..., None, None]
        predicted = torch.einsum("bhk,bhkv->bhv", key[:, t], state)
        state = state + torch.einsum("bhk,bhv->bhkv", key[:, t], (value[:, t] - predicted) * beta[:, t, :, None])
        outputs.append(torch.einsum("bhk,bhkv->bhv", query[:, t], state))
    return torch.stack(outputs, 1), state


def inputs(tokens: int, dtype=torch.float64, decay: float = 1.0):
    generator = torch.Generator().manual_seed(tokens)
    batch, key_heads, value_heads, key_dim, value_dim = 2, 2, 4, 16, 8

    def draw(*shape):
        return torch.randn(*shape, generator=generator, dtype=dtype)

    return dict(
        query=draw(batch, tokens, key_heads, key_dim),
        key=draw(batch, tokens, key_heads, key_dim),
        value=draw(batch, tokens, value_heads, value_dim),
        g=-decay * torch.rand(batch, tokens, value_heads, generator=generator, dtype=dtype),
        beta=torch.rand(batch, tokens, value_heads, generator=generator, dtype=dtype),
        initial_state=draw(batch, value_heads, key_dim, value_dim),
    )


@pytest.mark.parametrize(("tokens", "chunk"), [(1, 256), (37, 256), (100, 32), (300, 64), (300, 128), (513, 256)])
def test_the_output_and_final_state_are_the_definitions_and_so_are_the_gradients(tokens: int, chunk: int) -> None:
    args = {name: tensor.requires_grad_(True) for name, tensor in inputs(tokens, decay=0.2).items()}
    out, final = chunk_gated_delta_rule(
        **args, chunk_size=chunk, output_final_state=True, use_qk_l2norm_in_kernel=True
    )
    state = args["initial_state"]
    want, want_final = definition(*(args[name] for name in ("query", "key", "value", "g", "beta")), state)
    assert out.dtype == torch.float64 and out.shape == want.shape
    torch.testing.assert_close(out, want, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(final, want_final, rtol=1e-10, atol=1e-12)

    upstream = torch.randn_like(out)
    got = torch.autograd.grad((out * upstream).sum() + final.sum(), list(args.values()))
    expected = torch.autograd.grad((want * upstream).sum() + want_final.sum(), list(args.values()))
    for name, a, b in zip(args, got, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10, msg=lambda message, name=name: f"{name}: {message}")


def test_it_returns_what_transformers_reference_returns_in_the_callers_dtype() -> None:
    args = {name: tensor.bfloat16() for name, tensor in inputs(200, dtype=torch.float32).items()}
    reference = modeling.torch_chunk_gated_delta_rule.__wrapped__
    out, final = chunk_gated_delta_rule(**args, output_final_state=True, use_qk_l2norm_in_kernel=True)
    want, want_final = reference(**args, output_final_state=True, use_qk_l2norm_in_kernel=True)
    assert out.dtype == want.dtype == torch.bfloat16 and out.shape == want.shape and out.is_contiguous()
    assert final.dtype == want_final.dtype == torch.float32
    torch.testing.assert_close(out, want, rtol=2e-2, atol=2e-2)  # bf16 output of two float32 computations
    torch.testing.assert_close(final, want_final, rtol=1e-4, atol=1e-4)
    assert chunk_gated_delta_rule(**args)[1] is None  # no final state unless asked, as transformers' reference


@pytest.mark.parametrize("chunk", [64, 128, 256])
def test_the_decay_parameters_gradients_keep_float32s_precision(chunk: int) -> None:
    """A_log and dt_bias reach the output only through exp(decay over a span of a chunk). Summed as a difference
    of two running sums (transformers' reference), that span loses digits as the sums grow; summed directly, it keeps
    float32's."""
    layer = check.build_layer(check.TINY_LAYER, "cpu", torch.float64)
    exact_layer, float_layer = layer, copy.deepcopy(layer).float()
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1, 1024, layer.hidden_size, generator=generator, dtype=torch.float64)
    upstream = torch.randn(1, 1024, layer.hidden_size, generator=generator, dtype=torch.float64)
    with check.chunk_kernel(functools.partial(chunk_gated_delta_rule, chunk_size=chunk)):
        exact = check.forward_backward(exact_layer, x, upstream)
        got = check.relative_errors(check.forward_backward(float_layer, x.float(), upstream.float()), exact)
    assert got["A_log"] < 1e-5 and got["dt_bias"] < 1e-5, got
    assert max(got.values()) < 1e-5, got


def test_under_the_trainers_bf16_autocast_it_computes_in_float32_and_its_backward_runs() -> None:
    """The trainer runs the update under bf16 autocast, which would put the matmuls (and the scan's saved tensors)
    in bf16 while its inputs are float32: the rule's result and gradients are the ones it gives without autocast."""
    args = {name: tensor.requires_grad_(True) for name, tensor in inputs(150, dtype=torch.float32).items()}
    plain, plain_final = chunk_gated_delta_rule(**args, output_final_state=True, use_qk_l2norm_in_kernel=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, final = chunk_gated_delta_rule(**args, output_final_state=True, use_qk_l2norm_in_kernel=True)
    assert out.dtype == final.dtype == torch.float32
    torch.testing.assert_close(out, plain, rtol=0, atol=0)
    upstream = torch.randn_like(out)
    got = torch.autograd.grad((out * upstream).sum() + final.sum(), list(args.values()))
    want = torch.autograd.grad((plain * upstream).sum() + plain_final.sum(), list(args.values()))
    for name, a, b in zip(args, got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=lambda message, name=name: f"{name}: {message}")
