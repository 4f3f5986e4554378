"""Which kernels the policy's Gated DeltaNet layers (Qwen3.5's linear attention) train and decode with.

transformers runs these layers through the `fla` package when it is installed, else through its own torch
reference (correct, slower, float32 inside). fla's chunked backward is wrong on Hopper GPUs under Triton 3.4 up to
3.7.0 (fla's own check, which raises in the middle of the first update: "gated chunk_bwd_dqkwg ... produces
incorrect results"), unless its TileLang backend (the `tilelang` package and a usable nvcc) takes that kernel.
torch 2.11 and 2.12 install Triton 3.6; torch 2.13 installs 3.7.1, where fla is correct.

So the route is decided once, when the trainer is built, from what the machine has:

- `fla`: fla's kernels are correct here (not Hopper, Triton >= 3.7.1, or TileLang): rollouts and updates use them;
- `torch`: fla is not installed: the project's torch implementation of the chunked rule everywhere
  (`gated_delta_rule.py`: the same function as transformers' reference, with a sixth of its kernels and the decay
  parameters' gradients exact to float32's precision, where the reference's lose about four digits);
- `fla-rollouts`: fla would compute wrong gradients here: rollouts (no gradient) keep fla's fast kernels, and
  every forward that records a gradient (the update, and its recomputation under gradient checkpointing) goes
  through the project's torch implementation, so gradients are correct. docs/gpu.md has what each route costs.

Where fla is installed (`fla` and `fla-rollouts`), a decode step's one-token recurrence calls fla's fused kernel
itself. transformers means to (it picks fla's kernel when fla imports), but its wrapper falls back to the torch
reference whenever `torch.compiler.is_exporting()` says an export is being traced, and torch 2.11's dynamo answers
True under every torch.compile (pytorch/pytorch#176347, fixed in 2.12): the compiled decode step ran the reference,
several small kernels a layer, instead of fla's one.

A Gated DeltaNet layer whose chunked kernel cannot be rerouted (a model module laid out differently from
transformers' Qwen3.5 and Qwen3-Next) on a machine where fla is wrong is refused with the fix, before any rollout;
where fla is absent, such a layer keeps its own torch code.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from watercolour.policy.gated_delta_rule import chunk_gated_delta_rule


Route = Literal["none", "fla", "torch", "fla-rollouts"]
# The module-level function transformers' Gated DeltaNet layers call for a chunk of several tokens.
CHUNK_FUNCTION = "torch_chunk_gated_delta_rule"
# The one they call for one token with a cache: a decode step.
RECURRENT_FUNCTION = "torch_recurrent_gated_delta_rule"
FIX = (
    "run `make gpu-setup` (the measured stack: TileLang 0.1.15 and CUDA 13.0's compiler, from which fla takes that "
    "kernel) or install torch>=2.13 (Triton 3.7.1)"
)


# What a run says of its route when it is built (a policy with Gated DeltaNet layers), so that its timings say what
# they measured.
ROUTE_LINES: dict[Route, str] = {
    "fla": "Gated DeltaNet: fla's kernels in the rollouts and the update (fla's backward is correct on this machine)",
    "torch": "Gated DeltaNet: the project's torch implementation of the rule in the rollouts and the update (fla is "
    "not installed; on a GPU, `make gpu-setup` installs it and its kernels)",
    "fla-rollouts": "Gated DeltaNet: fla's backward is wrong on this GPU, so updates use the project's torch "
    f"implementation of the rule (correct, slower than fla's kernel): {FIX}",
}


class GatedDeltaBackwardUnavailable(RuntimeError):
    """No route to correct gradients through the policy's Gated DeltaNet layers on this machine."""


@dataclass(frozen=True)
class KernelFacts:
    """What decides the route: whether transformers uses fla, and whether fla's backward is correct here; `why`
    says what decided both (`watercolour rehearse --route` prints it)."""

    fla: bool
    fla_backward_correct: bool = True
    why: str = ""


def fla_facts() -> KernelFacts:
    """Read from fla itself, with the same conditions its kernels check."""
    try:
        from fla.ops.common.backends.tilelang import CommonTileLangBackend
        from fla.utils import IS_NVIDIA_HOPPER, TRITON_ABOVE_3_4_0, TRITON_ABOVE_3_7_1
    except Exception as error:  # no fla, or no Triton under it (a CPU build of torch): transformers uses its reference
        return KernelFacts(fla=False, why=f"fla cannot be imported here ({type(error).__name__}: {error})")
    tilelang = CommonTileLangBackend.is_available() and CommonTileLangBackend().is_enabled()
    return backward_facts(IS_NVIDIA_HOPPER, TRITON_ABOVE_3_4_0 and not TRITON_ABOVE_3_7_1, tilelang)


def backward_facts(hopper: bool, triton_wrong_on_hopper: bool, tilelang: bool) -> KernelFacts:
    """Whether fla's chunked backward is correct on a machine where fla imports, and why."""
    if not hopper:
        return KernelFacts(fla=True, why="fla imports, and this is not a Hopper GPU: its backward is correct here")
    if not triton_wrong_on_hopper:
        return KernelFacts(fla=True, why="fla imports on a Hopper GPU, and this Triton is not 3.4 to 3.7.0")
    if tilelang:
        return KernelFacts(
            fla=True,
            why="a Hopper GPU under Triton 3.4 to 3.7.0, where fla's chunked backward is wrong, but TileLang (with "
            "a usable nvcc) takes that kernel",
        )
    return KernelFacts(
        fla=True,
        fla_backward_correct=False,
        why="a Hopper GPU under Triton 3.4 to 3.7.0, where fla's chunked backward is wrong, and TileLang cannot take "
        "that kernel (not installed, no nvcc found, or FLA_TILELANG=0)",
    )


def decide(facts: KernelFacts, has_layers: bool) -> Route:
    if not has_layers:
        return "none"
    if not facts.fla:
        return "torch"
    return "fla" if facts.fla_backward_correct else "fla-rollouts"


class TorchWhenTraining:
    """The chunked gated delta rule: `fast` without a gradient (fla's kernel, on the route `fla-rollouts`), the
    project's torch implementation with one."""

    def __init__(self, fast: Callable[..., Any], replaced: Any) -> None:
        self.fast = fast
        self.__name__ = CHUNK_FUNCTION
        self.__wrapped__ = replaced.__wrapped__  # transformers' reference, as on the function this replaces

    # Set by `as_in_training`: forwards without a gradient take the torch implementation too (checks of the loss).
    everywhere = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        if not torch.is_grad_enabled() and not TorchWhenTraining.everywhere:
            return self.fast(*args, **kwargs)
        if kwargs.get("cu_seqlens") is not None:  # transformers' reference would ignore the boundaries
            raise GatedDeltaBackwardUnavailable(
                f"packed sequences through Gated DeltaNet layers need fla's kernels with a correct backward: install "
                f"flash-linear-attention, and on a Hopper GPU {FIX}"
            )
        return chunk_gated_delta_rule(*args, **kwargs)


def fla_recurrent_kernel() -> Callable[..., Any] | None:
    """fla's fused one-token kernel, or None where fla cannot be imported."""
    try:
        from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule
    except Exception:  # no fla, or no Triton under it
        return None
    return fused_recurrent_gated_delta_rule


class FlaRecurrence:
    """The one-token gated delta rule: fla's fused kernel without a gradient (a decode step, compiled or not),
    transformers' function with one (fla's kernel has no backward). Called with transformers' arguments; those the
    kernel does not name are left out, as transformers' wrapper leaves them out."""

    def __init__(self, kernel: Callable[..., Any], replaced: Any) -> None:
        self.kernel = kernel
        self.replaced = replaced
        self.__name__ = RECURRENT_FUNCTION
        self.__wrapped__ = replaced.__wrapped__
        variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        self.named = frozenset(
            name for name, parameter in inspect.signature(kernel).parameters.items() if parameter.kind not in variadic
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        if torch.is_grad_enabled():
            return self.replaced(*args, **kwargs)
        return self.kernel(*args, **{name: value for name, value in kwargs.items() if name in self.named})


def route_recurrence(modules: list[Any]) -> None:
    """Send the decode step's recurrence of each module to fla's kernel, where fla imports (idempotent)."""
    kernel = fla_recurrent_kernel()
    if kernel is None:
        return
    for module in modules:
        current = getattr(module, RECURRENT_FUNCTION, None)
        if isinstance(current, FlaRecurrence) or getattr(current, "__wrapped__", None) is None:
            continue  # routed already, or a layer of another layout: its own code
        setattr(module, RECURRENT_FUNCTION, FlaRecurrence(kernel, replaced=current))


@contextmanager
def as_in_training() -> Iterator[None]:
    """Forwards without a gradient compute what the update's forward computes (the torch implementation where
    routed), so a check of the loss's log-probs need not record a graph to see them."""
    TorchWhenTraining.everywhere = True
    try:
        yield
    finally:
        TorchWhenTraining.everywhere = False


def gated_delta_layers(model: Any) -> list[Any]:
    return [module for module in model.modules() if type(module).__name__.endswith("GatedDeltaNet")]


def route_gated_delta_rule(model: Any, facts: KernelFacts | None = None) -> Route:
    """Decide the route for `model` on this machine and apply it (idempotent); returns the route."""
    layers = gated_delta_layers(model)
    route = decide(facts or fla_facts(), bool(layers))
    modules = [sys.modules[name] for name in sorted({type(layer).__module__ for layer in layers})]
    if route in ("fla", "fla-rollouts"):
        route_recurrence(modules)
    if route not in ("torch", "fla-rollouts"):
        return route
    for module in modules:
        module_name = module.__name__
        current = getattr(module, CHUNK_FUNCTION, None)
        if isinstance(current, TorchWhenTraining):
            continue
        # transformers' function (kernel-hub decorated, so it has `__wrapped__`) is the contract ours keeps.
        if current is None or getattr(current, "__wrapped__", None) is None:
            if route == "torch":
                continue  # the layer's own torch code: correct, only slower
            raise GatedDeltaBackwardUnavailable(
                f"the Gated DeltaNet layers of {module_name} call no `{CHUNK_FUNCTION}` that can be sent to the torch "
                f"implementation for the update, and fla's backward is wrong on this GPU: {FIX}"
            )
        fast = current if route == "fla-rollouts" else chunk_gated_delta_rule
        setattr(module, CHUNK_FUNCTION, TorchWhenTraining(fast, replaced=current))
    return route
