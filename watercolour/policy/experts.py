"""Mixture-of-experts layers in a compiled decode step, with each chosen expert's weights read where they lie.

transformers runs a layer's experts as two grouped GEMMs over the tokens sorted by expert (`grouped_mm_experts_forward`:
cuBLAS's grouped kernel reads each chosen expert's weights in place). Under torch.compile the decode step's GEMMs are
lowered by inductor instead, and on the H200 the Qwen3.5-35B-A3B decode step's profile shows a gather of weights
(`triton_poi_fused_index_view`, 7.5 ms of a 27 ms step, one call per layer) feeding batched GEMMs: at a batch of 8
rows and the top 8 of 256 experts, some 64 experts' weights per layer are read, written and read again
(docs/gpu.md). Here a decode step's experts run as one custom op the compiler does not look into, so transformers'
own grouped GEMMs run inside the captured CUDA graph. Forwards with a gradient (the update) and every forward that is
not compiled go through transformers' function unchanged.

It is registered with transformers' experts interface under its own name, so a model opts in through its config
(`use_grouped_experts`), as `watercolour.policy.attention` does for attention.
"""

from __future__ import annotations

from typing import Any


GROUPED_EXPERTS = "grouped_mm_in_place"
# Experts modules that stand for their model's layers, by the index each layer carries: a custom op takes tensors
# and numbers, not modules.
LAYERS: list[Any] = []
LAYER_INDEX = "_grouped_experts_index"


class _Weights:
    """An experts module seen with other weights: every other attribute (the activation, the layout flags, the number of
    experts) is the module's own. The layers of one model share all of those, so one module stands for them all."""

    def __init__(self, module: Any, gate_up_proj: Any, down_proj: Any) -> None:
        self._module = module
        self.gate_up_proj = gate_up_proj
        self.down_proj = down_proj

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def _experts_op() -> Any:
    """The custom op `watercolour::grouped_experts`, defined on first use (torch is imported only here)."""
    import torch

    if hasattr(torch.ops.watercolour, "grouped_experts"):
        return torch.ops.watercolour.grouped_experts

    # The schema is spelt out: this module's annotations are strings (`from __future__ import annotations`). The
    # weights travel as tensors and the module by the index of one that stands for every layer of its model: an
    # index per layer would be a constant the compiler guards on, and recompiles the decode step for each layer.
    @torch.library.custom_op(
        "watercolour::grouped_experts",
        mutates_args=(),
        schema="(Tensor hidden_states, Tensor top_k_index, Tensor top_k_weights, Tensor gate_up_proj, "
        "Tensor down_proj, int layers) -> Tensor",
    )
    def grouped_experts(
        hidden_states: torch.Tensor,
        top_k_index: torch.Tensor,
        top_k_weights: torch.Tensor,
        gate_up_proj: torch.Tensor,
        down_proj: torch.Tensor,
        layers: int,
    ) -> torch.Tensor:
        from transformers.integrations.moe import grouped_mm_experts_forward

        module: Any = _Weights(LAYERS[layers], gate_up_proj, down_proj)  # the module, other weights
        return grouped_mm_experts_forward(module, hidden_states, top_k_index, top_k_weights)

    @grouped_experts.register_fake
    def _(hidden_states: torch.Tensor, *_: Any) -> Any:
        return torch.empty_like(hidden_states)

    return torch.ops.watercolour.grouped_experts


def grouped_experts_forward(module: Any, hidden_states: Any, top_k_index: Any, top_k_weights: Any) -> Any:
    import torch
    from transformers.integrations.moe import grouped_mm_experts_forward

    if torch.compiler.is_compiling() and not torch.is_grad_enabled():
        # The op is defined before anything is compiled (`use_grouped_experts`): defining it while the compiler
        # traces would break the decode step's graph into one graph per layer.
        weights = (module.gate_up_proj, module.down_proj)
        op = torch.ops.watercolour.grouped_experts
        return op(hidden_states, top_k_index, top_k_weights, *weights, getattr(module, LAYER_INDEX))
    return grouped_mm_experts_forward(module, hidden_states, top_k_index, top_k_weights)


def experts_modules(model: Any) -> list[Any]:
    """The modules that hold a layer's experts and dispatch on `config._experts_implementation`."""
    return [module for module in model.modules() if type(module).__name__.endswith("Experts")]


def use_grouped_experts(model: Any) -> list[str]:
    """Switch every experts module of `model` that runs transformers' grouped GEMMs to the in-place op; returns the
    config classes switched. Other implementations (a chosen kernel, eager) are left alone."""
    from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

    _experts_op()
    if GROUPED_EXPERTS not in ALL_EXPERTS_FUNCTIONS:
        ALL_EXPERTS_FUNCTIONS.register(GROUPED_EXPERTS, grouped_experts_forward)
    switched = set()
    stands_for: dict[int, int] = {}  # config -> the index of the module that stands for its layers
    for module in experts_modules(model):
        config = module.config
        if config._experts_implementation not in ("grouped_mm", GROUPED_EXPERTS):
            continue
        if getattr(module, LAYER_INDEX, None) is None:
            if id(config) not in stands_for:
                stands_for[id(config)] = len(LAYERS)
                LAYERS.append(module)
            setattr(module, LAYER_INDEX, stands_for[id(config)])
        # The internal attribute: the public setter would also overwrite every sub-config's choice.
        config._experts_implementation_internal = GROUPED_EXPERTS
        switched.add(type(config).__name__)
    return sorted(switched)
