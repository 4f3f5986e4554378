"""MoE experts in a compiled decode step: transformers' grouped GEMMs kept out of the compiler, same values."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

from watercolour.policy.experts import GROUPED_EXPERTS, experts_modules, use_grouped_experts


def tiny_moe() -> Qwen3_5MoeForCausalLM:
    config = Qwen3_5MoeTextConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2, linear_num_value_heads=4,
        moe_intermediate_size=16, shared_expert_intermediate_size=16, num_experts=8, num_experts_per_tok=2,
        vocab_size=64, layer_types=["linear_attention", "full_attention"],
    )  # fmt: skip
    torch.manual_seed(0)
    return Qwen3_5MoeForCausalLM(config).eval()


def traced(model: torch.nn.Module, ids: torch.Tensor) -> tuple[torch.Tensor, list[object]]:
    """The model's logits under torch.compile (dynamo traces the forward as in a compiled decode step) and the
    call targets of every traced graph."""
    targets: list[object] = []

    def record(graph_module: torch.fx.GraphModule, _: list[torch.Tensor]):
        targets.append("a graph")
        targets.extend(node.target for node in graph_module.graph.nodes if node.op == "call_function")
        return graph_module.forward

    torch._dynamo.reset()
    with torch.no_grad():
        logits = torch.compile(model, backend=record)(ids).logits
    return logits, targets


def test_the_in_place_experts_give_transformers_values_and_stay_opaque_to_the_compiler() -> None:
    model = tiny_moe()
    ids = torch.randint(0, 64, (3, 5))
    with torch.no_grad():
        expected = model(ids).logits
    stock_logits, stock_targets = traced(copy.deepcopy(model), ids)
    assert not [target for target in stock_targets if "grouped_experts" in str(target)]

    assert use_grouped_experts(model) == ["Qwen3_5MoeTextConfig"]
    assert all(module.config._experts_implementation == GROUPED_EXPERTS for module in experts_modules(model))
    logits, targets = traced(model, ids)
    assert targets.count(torch.ops.watercolour.grouped_experts) == 2  # one op per MoE layer, traced whole
    assert targets.count("a graph") == stock_targets.count("a graph")  # the op breaks no graph
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(stock_logits, expected, rtol=1e-5, atol=1e-5)


def test_a_forward_with_a_gradient_runs_transformers_experts_and_trains() -> None:
    model = tiny_moe()
    reference = copy.deepcopy(model)
    use_grouped_experts(model)
    ids = torch.randint(0, 64, (2, 6))
    loss = model(ids, labels=ids).loss
    loss.backward()
    reference(ids, labels=ids).loss.backward()
    experts, reference_experts = experts_modules(model)[0], experts_modules(reference)[0]
    assert experts.gate_up_proj.grad is not None
    torch.testing.assert_close(experts.gate_up_proj.grad, reference_experts.gate_up_proj.grad)


def test_a_model_without_experts_is_left_alone() -> None:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    dense = Qwen3ForCausalLM(Qwen3Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, vocab_size=64))
    assert use_grouped_experts(dense) == []


@pytest.mark.parametrize("chosen", ["eager", "batched_mm"])
def test_an_experts_implementation_chosen_on_purpose_is_kept(chosen: str) -> None:
    model = tiny_moe()
    model.set_experts_implementation(chosen)
    assert use_grouped_experts(model) == []
    assert all(module.config._experts_implementation == chosen for module in experts_modules(model))


def test_every_layer_shares_one_compiled_graph() -> None:
    """A decode step compiles each decoder layer's forward once for all layers (gradient checkpointing wraps them
    one by one); a per-layer constant inside the op's call would recompile it for every layer."""
    model = tiny_moe()
    use_grouped_experts(model)
    compiled: list[int] = []

    def count(graph_module: torch.fx.GraphModule, _: list[torch.Tensor]):
        compiled.append(1)
        return graph_module.forward

    torch._dynamo.reset()
    run_block = torch.compile(lambda block, states: block(states), backend=count)
    states = torch.randn(3, 5, 32)
    with torch.no_grad():
        for layer in model.model.layers:
            run_block(layer.mlp, states)
    assert len(compiled) == 1
