"""An update's time by part of the model: every operation's time lands in one part and phase, a backward operation in
the part of the forward operation that made its node, a recomputed forward in the part that ran it."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.checkpoint import checkpoint

from bench.gpu.update_parts import OUTSIDE, labelled, part_of, table, time_by_part


class Heavy(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(width, width) / width**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(4):
            x = torch.tanh(x @ self.weight)
        return x


class Layer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear_attn = Heavy(384)  # the heavy part, recomputed under checkpointing
        self.experts = Heavy(8)  # a light one, not recomputed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = checkpoint(self.linear_attn, x, use_reentrant=False)
        return x[:, :8] * 2 + self.experts(x[:, :8]).sum()


class Toy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer()])


def test_each_module_name_gives_its_part() -> None:
    linear = torch.nn.Linear(2, 2)
    assert part_of("model.layers.3.linear_attn", linear) == "Gated DeltaNet layers"
    assert part_of("model.layers.3.linear_attn.in_proj_qkv.base_layer", linear) == "Gated DeltaNet layers"
    assert part_of("model.layers.3.linear_attn.in_proj_qkv.lora_A.default", linear) == "LoRA adapters"
    assert part_of("model.layers.3.linear_attn.norm", linear) == "norms"
    assert part_of("model.layers.7.self_attn.q_proj.base_layer", linear) == "full attention layers"
    assert part_of("model.layers.7.mlp.gate", linear) == "MoE router"
    assert part_of("model.layers.7.mlp.experts", linear) == "MoE experts"
    assert part_of("model.layers.7.mlp.shared_expert_gate.base_layer", linear) == "shared expert"
    moe_block = torch.nn.Module()
    moe_block.experts = torch.nn.Module()
    assert part_of("model.layers.7.mlp", moe_block) == "MoE block (dispatch, combine)"
    assert part_of("model.layers.7.mlp", linear) == "MLP"  # a dense model's
    assert part_of("model.layers.7", linear) == "decoder layers (residuals)"
    assert part_of("model.layers", linear) is None  # a container: its operations are its parts'


@pytest.fixture
def profiled() -> tuple[dict[str, dict[str, float]], float]:
    torch.manual_seed(0)
    model = Toy()
    x = torch.randn(256, 384)
    model.layers[0](x).square().mean().backward()  # the first pass allocates; profile the second
    with labelled(model), profile(activities=[ProfilerActivity.CPU]) as prof:
        model.layers[0](x).square().mean().backward()
    events = prof.profiler.function_events
    return time_by_part(events, device=False), sum(event.self_cpu_time_total for event in events) / 1e6


def test_every_operation_lands_in_a_part_and_backward_goes_to_its_forwards_part(profiled) -> None:
    parts, total = profiled
    assert sum(sum(row.values()) for row in parts.values()) == pytest.approx(total, rel=1e-6)  # nothing lost
    heavy, light = parts["Gated DeltaNet layers"], parts["MoE experts"]
    # The heavy part's matmul gradients are computed in autograd's engine, outside every range: they are its.
    assert heavy["backward"] > 5 * light["backward"] > 0
    assert heavy["backward"] > parts[OUTSIDE]["backward"]
    # Checkpointing reruns the heavy part's forward inside the backward; the light one is not rerun.
    assert heavy["recompute"] > 0.2 * heavy["forward"] > 0
    assert light["recompute"] == 0 and light["forward"] > 0
    # The layer's own multiply and the loss, in no range of their own, go to the layer and outside.
    assert parts["decoder layers (residuals)"]["forward"] > 0 and parts[OUTSIDE]["forward"] > 0


def test_the_table_lists_the_largest_part_first_with_its_share(profiled) -> None:
    parts, _ = profiled
    lines = table(parts, "CPU").splitlines()
    assert lines[0].startswith("| part (CPU s) | forward | recompute | backward")
    assert lines[2].startswith("| Gated DeltaNet layers |")
    shares = [int(line.rsplit("|", 2)[-2].strip().rstrip("%")) for line in lines[2:]]
    assert shares == sorted(shares, reverse=True) and 95 <= sum(shares) <= 105
