"""The Gated DeltaNet kernel route: correct gradients wherever fla's would be wrong, and the gradient check."""

from __future__ import annotations

import copy
import sys
import types

import pytest
import torch
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig
from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as modeling

from bench.gpu import linear_attention as check
from watercolour.policy import linear_attention
from watercolour.policy.gated_delta_rule import chunk_gated_delta_rule
from watercolour.policy.linear_attention import (
    CHUNK_FUNCTION,
    RECURRENT_FUNCTION,
    FlaRecurrence,
    GatedDeltaBackwardUnavailable,
    KernelFacts,
    TorchWhenTraining,
    backward_facts,
    decide,
    route_gated_delta_rule,
)


def tiny_moe() -> Qwen3_5MoeForCausalLM:
    torch.manual_seed(0)
    return Qwen3_5MoeForCausalLM(
        Qwen3_5MoeTextConfig(
            hidden_size=32, num_hidden_layers=2, full_attention_interval=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=8, linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2,
            linear_num_value_heads=4, moe_intermediate_size=16, shared_expert_intermediate_size=16, num_experts=4,
            num_experts_per_tok=2, vocab_size=64,
        )
    )  # fmt: skip


def test_the_route_follows_what_the_machine_has() -> None:
    assert decide(KernelFacts(fla=True), has_layers=False) == "none"
    assert decide(KernelFacts(fla=False), has_layers=True) == "torch"
    assert decide(KernelFacts(fla=True, fla_backward_correct=True), has_layers=True) == "fla"
    assert decide(KernelFacts(fla=True, fla_backward_correct=False), has_layers=True) == "fla-rollouts"


def test_the_route_says_why_from_the_gpu_tritons_version_and_tilelang() -> None:
    on_hopper = {tilelang: backward_facts(True, True, tilelang) for tilelang in (True, False)}
    assert decide(on_hopper[True], has_layers=True) == "fla" and "TileLang (with a usable nvcc)" in on_hopper[True].why
    assert decide(on_hopper[False], has_layers=True) == "fla-rollouts"
    assert "TileLang cannot take that kernel" in on_hopper[False].why
    assert decide(backward_facts(True, False, False), has_layers=True) == "fla", "Triton 3.7.1 is correct"
    assert decide(backward_facts(False, True, False), has_layers=True) == "fla", "only Hopper is wrong"
    assert "not a Hopper GPU" in backward_facts(False, True, False).why


def test_where_fla_is_wrong_updates_take_the_torch_implementation_and_rollouts_keep_the_fast_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    reference = modeling.torch_chunk_gated_delta_rule.__wrapped__

    def fast(*args, **kwargs):  # stands in for fla's kernel: it computes the same thing, and says it was called
        calls.append("fast")
        return reference(*args, **kwargs)

    def torch_implementation(*args, **kwargs):
        calls.append("torch")
        return chunk_gated_delta_rule(*args, **kwargs)

    fast.__wrapped__ = reference
    monkeypatch.setattr(modeling, CHUNK_FUNCTION, fast)
    monkeypatch.setattr(linear_attention, "chunk_gated_delta_rule", torch_implementation)
    model = tiny_moe()
    facts = KernelFacts(fla=True, fla_backward_correct=False)
    assert route_gated_delta_rule(model, facts) == "fla-rollouts"
    routed = getattr(modeling, CHUNK_FUNCTION)
    assert isinstance(routed, TorchWhenTraining) and routed.fast is fast and routed.__wrapped__ is reference
    assert route_gated_delta_rule(model, facts) == "fla-rollouts" and getattr(modeling, CHUNK_FUNCTION) is routed
    ids = torch.randint(0, 64, (2, 9))
    with torch.no_grad():
        model(ids)
    assert calls == ["fast"]  # the one linear-attention layer, without a gradient: fla
    model(ids).logits.sum().backward()
    assert calls == ["fast", "torch"]  # with one: the torch implementation
    assert model.model.layers[0].linear_attn.in_proj_qkv.weight.grad is not None


def test_without_fla_every_forward_takes_the_torch_implementation(monkeypatch: pytest.MonkeyPatch) -> None:
    transformers_function = modeling.torch_chunk_gated_delta_rule
    monkeypatch.setattr(modeling, CHUNK_FUNCTION, transformers_function)  # restored after the test
    model = tiny_moe()
    ids = torch.randint(0, 64, (2, 9))
    with torch.no_grad():
        before = model(ids).logits
    assert route_gated_delta_rule(model, KernelFacts(fla=False)) == "torch"
    routed = getattr(modeling, CHUNK_FUNCTION)
    assert isinstance(routed, TorchWhenTraining) and routed.fast is chunk_gated_delta_rule
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, before, rtol=1e-4, atol=1e-5)


def fake_fla_recurrence(calls: list[tuple[str, ...]]):
    """Stands in for fla's fused one-token kernel (its parameters, none of transformers' extra ones): computes what
    transformers' reference computes, and records the keyword arguments it was given."""
    reference = modeling.torch_recurrent_gated_delta_rule.__wrapped__

    def fused_recurrent_gated_delta_rule(
        q, k, v, g=None, beta=None, scale=None, initial_state=None, output_final_state=False,
        use_qk_l2norm_in_kernel=False, cu_seqlens=None, **kwargs,
    ):  # fmt: skip
        calls.append(tuple(sorted(name for name, value in locals().items() if name in ("kwargs",) and value)))
        return reference(
            q, k, v, g=g, beta=beta, initial_state=initial_state, output_final_state=output_final_state,
            use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
        )  # fmt: skip

    return fused_recurrent_gated_delta_rule


def decode_step_logits(model, ids: torch.Tensor, step=None) -> torch.Tensor:
    """The prompt's forward with a cache, then one token through `step` (the model, or a compiled model)."""
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
        return (model if step is None else step)(ids[:, -1:], past_key_values=cache).logits


@pytest.mark.parametrize("route_facts", [KernelFacts(fla=True), KernelFacts(fla=True, fla_backward_correct=False)])
def test_where_fla_is_installed_a_decode_step_calls_its_recurrent_kernel_compiled_or_not(
    monkeypatch: pytest.MonkeyPatch, route_facts: KernelFacts
) -> None:
    transformers_function = modeling.torch_recurrent_gated_delta_rule
    monkeypatch.setattr(modeling, RECURRENT_FUNCTION, transformers_function)  # restored after the test
    monkeypatch.setattr(modeling, CHUNK_FUNCTION, modeling.torch_chunk_gated_delta_rule)
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(linear_attention, "fla_recurrent_kernel", lambda: fake_fla_recurrence(calls))
    model = tiny_moe()
    ids = torch.randint(0, 64, (2, 7))
    before = decode_step_logits(model, ids)
    assert calls == []  # transformers' own function on CPU

    route_gated_delta_rule(model, route_facts)
    routed = getattr(modeling, RECURRENT_FUNCTION)
    assert isinstance(routed, FlaRecurrence) and routed.replaced is transformers_function
    assert routed.__wrapped__ is transformers_function.__wrapped__
    route_gated_delta_rule(model, route_facts)
    assert getattr(modeling, RECURRENT_FUNCTION) is routed  # idempotent

    torch.testing.assert_close(decode_step_logits(model, ids), before)
    assert calls == [()]  # the one linear-attention layer, given only the arguments the kernel names
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="eager")
    torch.testing.assert_close(decode_step_logits(model, ids, step=compiled), before)
    assert len(calls) == 2  # traced through under torch.compile, where transformers' wrapper may take its reference
    torch._dynamo.reset()

    # fla's kernel has no backward: with a gradient, transformers' function.
    q, k, v = (torch.randn(2, 1, 2, 8, requires_grad=True) for _ in range(3))
    out, _ = routed(q, k, v, g=-torch.rand(2, 1, 2), beta=torch.rand(2, 1, 2), initial_state=torch.zeros(2, 2, 8, 8))
    out.sum().backward()
    assert len(calls) == 2 and q.grad is not None


def test_without_fla_the_decode_step_keeps_transformers_recurrence(monkeypatch: pytest.MonkeyPatch) -> None:
    transformers_function = modeling.torch_recurrent_gated_delta_rule
    monkeypatch.setattr(modeling, RECURRENT_FUNCTION, transformers_function)
    monkeypatch.setattr(modeling, CHUNK_FUNCTION, modeling.torch_chunk_gated_delta_rule)
    monkeypatch.setattr(linear_attention, "fla_recurrent_kernel", lambda: pytest.fail("fla is not asked for"))
    route_gated_delta_rule(tiny_moe(), KernelFacts(fla=False))
    assert getattr(modeling, RECURRENT_FUNCTION) is transformers_function


def test_a_layer_that_cannot_be_rerouted_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("elsewhere_modeling")
    module.torch_chunk_gated_delta_rule = lambda *args, **kwargs: None  # no reference to route the update to
    monkeypatch.setitem(sys.modules, module.__name__, module)
    layer_class = type("ElsewhereGatedDeltaNet", (torch.nn.Module,), {"__module__": module.__name__})
    model = torch.nn.Sequential(layer_class())
    with pytest.raises(GatedDeltaBackwardUnavailable, match="make gpu-setup"):
        route_gated_delta_rule(model, KernelFacts(fla=True, fla_backward_correct=False))


def test_packed_sequences_are_refused_where_only_the_torch_implementation_is_correct() -> None:
    routed = TorchWhenTraining(lambda *a, **k: None, replaced=modeling.torch_chunk_gated_delta_rule)
    with pytest.raises(GatedDeltaBackwardUnavailable, match="packed sequences"):
        routed(cu_seqlens=torch.tensor([0, 4]))


def test_the_gradient_check_passes_the_reference_and_fails_a_kernel_with_a_wrong_gate_gradient(tmp_path) -> None:
    rows = check.main(["--tiny", "--tokens", "96", "--repeats", "1", "--out", str(tmp_path)])
    (torch_row,) = [row for row in rows if row["route"] == "torch"]
    assert torch_row["passes"] and torch_row["max_error"] > 0  # bf16 against float32: close, not equal
    assert (tmp_path / "linear_attention.jsonl").is_file()

    reference, _ = check.kernels()

    def gate_detached(query, key, value, g, beta, **kwargs):  # right forward, no gradient through the decay
        return reference(query, key, value, g.detach(), beta, **kwargs)

    layer = check.build_layer(check.TINY_LAYER, "cpu", torch.bfloat16)
    exact = copy.deepcopy(layer).float()  # the same (bf16-rounded) weights, in float32
    x, upstream = torch.randn(1, 96, 64), torch.randn(1, 96, 64)
    with check.chunk_kernel(reference):
        truth = check.forward_backward(exact, x, upstream)
        bf16 = check.relative_errors(check.forward_backward(layer, x.bfloat16(), upstream), truth)
    with check.chunk_kernel(gate_detached):
        wrong = check.relative_errors(check.forward_backward(layer, x.bfloat16(), upstream), truth)
    assert check.passes(bf16, None) and check.passes(bf16, bf16)
    assert not check.passes(wrong, bf16) and wrong["A_log"] > 0.5


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_compiled_decode_step_runs_flas_recurrent_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU with fla: the decode step compiled by inductor launches fla's recurrent kernel (transformers' wrapper
    compiles to its torch reference on torch 2.11) and gives the reference's logits."""
    from torch.profiler import ProfilerActivity, profile

    if linear_attention.fla_recurrent_kernel() is None:
        pytest.skip("needs fla")
    wrapper = modeling.torch_recurrent_gated_delta_rule
    monkeypatch.setattr(modeling, CHUNK_FUNCTION, modeling.torch_chunk_gated_delta_rule)
    monkeypatch.setattr(modeling, RECURRENT_FUNCTION, wrapper.__wrapped__)  # transformers' torch reference
    model = tiny_moe().cuda()
    ids = torch.randint(0, 64, (2, 7), device="cuda")
    reference = decode_step_logits(model, ids)
    monkeypatch.setattr(modeling, RECURRENT_FUNCTION, wrapper)
    route_gated_delta_rule(model, KernelFacts(fla=True))
    torch._dynamo.reset()
    compiled = torch.compile(model)
    decode_step_logits(model, ids, step=compiled)  # compiles
    with profile(activities=[ProfilerActivity.CUDA]) as profiled:
        logits = decode_step_logits(model, ids, step=compiled)
        torch.cuda.synchronize()
    torch._dynamo.reset()
    kernels = {event.name for event in profiled.events() if event.device_type == torch.autograd.DeviceType.CUDA}
    assert any("fused_recurrent" in name for name in kernels), sorted(kernels)[:20]
    torch.testing.assert_close(logits, reference, rtol=1e-3, atol=1e-3)
