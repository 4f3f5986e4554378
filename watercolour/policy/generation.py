"""How rollouts are generated: the KV cache, whether the decode step is compiled, and prompt padding.

TRL's default transformers path (dynamic cache, no compilation) launches every kernel of every layer from Python
for each new token; on a GPU that left the Qwen3-4B shape far below what memory bandwidth allows
(docs/gpu.md). A static cache preallocates the keys and values, so the decode step has fixed shapes and
transformers can compile it (torch.compile, CUDA graphs). The compiled graphs are kept on the model and reused
by every later step as long as the shapes stay the same: the generation batch is fixed by the configuration,
and a plan's `pad_multiple` can round the prompt length up so nearby lengths share one cache size.

A user chooses TRL's path or the fast one (`training.generation`); on CPU the default is TRL's (transformers
compiles generation only on accelerators). The levers one by one are the GPU benchmark's (`bench.gpu`).
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ground.run_config import TrainingSettings


# The name of the hook transformers' `enable_input_require_grads` registers on the input embeddings.
REQUIRE_GRADS_HOOK = "make_inputs_require_grads"


@dataclass(frozen=True)
class GenerationPlan:
    """The levers of rollout generation. A user chooses a path (`training.generation`: `TRL_PATH` or `FAST_PATH`);
    the GPU benchmark and the tests build plans lever by lever, to measure or check what each one is worth."""

    cache: str  # "dynamic" or "static"
    compile: bool
    # Prompts left-padded to a multiple of this many tokens, so nearby lengths share a compiled graph; off in the
    # fast path: on the H200 the compiled step with left padding sampled from NaN probabilities (docs/gpu.md).
    pad_multiple: int | None
    # Render and score each completion as soon as it ends (watercolour.policy.early_scoring): a lever of generation,
    # not of the reward, which is the same either way; it pays where the decode leaves CPUs idle.
    early_scoring: bool = False
    merge_adapter: bool = False  # decode with the LoRA merged into the weights (watercolour.policy.rollout_weights)
    packed_gqa: bool = False  # grouped-query attention without repeated keys and values (watercolour.policy.attention)
    grouped_experts: bool = False  # MoE experts read in place (watercolour.policy.experts)
    skip_guards: bool = False  # a decode step of shapes already compiled runs without its guards (UnguardedDecode)
    written_only: bool = False  # a decode step attends over the cache blocks written (watercolour.policy.attention)
    deferred_stop: bool = False  # the host never waits for a decode step to end (decode_without_waiting)


# TRL's default transformers path: a dynamic cache, nothing compiled, each completion scored with its batch.
TRL_PATH = GenerationPlan(cache="dynamic", compile=False, pad_multiple=None)
# The measured fast path (docs/gpu.md): every lever on. The decode-step levers act inside the compiled step only.
FAST_PATH = GenerationPlan(
    cache="static",
    compile=True,
    pad_multiple=None,
    early_scoring=True,
    merge_adapter=True,
    packed_gqa=True,
    grouped_experts=True,
    skip_guards=True,
    written_only=True,
    deferred_stop=True,
)


def resolve(training: TrainingSettings, cuda: bool | None = None) -> GenerationPlan:
    """The plan of the configuration's `training.generation`; unset, the fast path with a GPU and TRL's on CPU, where
    transformers compiles nothing and early renders would take cores from generation."""
    path = training.generation
    if path is None:
        if cuda is None:
            import torch

            cuda = torch.cuda.is_available()
        path = "fast" if cuda else "trl"
    return FAST_PATH if path == "fast" else TRL_PATH


def grpo_kwargs(plan: GenerationPlan) -> dict[str, Any]:
    """The GRPOConfig fields this plan sets (TRL's own names)."""
    return {
        # None is TRL's default: transformers then builds a dynamic cache.
        "cache_implementation": "static" if plan.cache == "static" else None,
        "pad_to_multiple_of": plan.pad_multiple,
    }


def enable_compile(trainer: Any, plan: GenerationPlan) -> None:
    """Let transformers compile the decode step of the trainer's rollouts.

    TRL 1.16 builds its GenerationConfig with `disable_compile=True` whatever the arguments say (and a
    `disable_compile` in `generation_kwargs` would collide with it), so the flag is lifted on the built trainer.
    """
    if not plan.compile:
        return
    from transformers import CompileConfig

    trainer.generation_config.disable_compile = False
    # transformers' defaults (inductor, "reduce-overhead": CUDA graphs, fullgraph off), named so a later change
    # of those defaults does not change a run silently.
    trainer.generation_config.compile_config = CompileConfig(
        fullgraph=False, dynamic=False, backend="inductor", mode="reduce-overhead"
    )


def prepare_rollouts(trainer: Any, plan: GenerationPlan) -> None:
    """Set the built trainer up to generate as planned: compilation, packed grouped-query attention, MoE experts read
    in place, the LoRA merged into the weights for each rollout (not under FSDP, whose sharded weights a layer
    cannot merge alone), and decode steps of shapes already compiled called without their guards."""
    from watercolour.policy.attention import KV_BLOCK, use_packed_gqa
    from watercolour.policy.experts import use_grouped_experts
    from watercolour.policy.rollout_weights import MergedForRollouts

    enable_compile(trainer, plan)
    if plan.packed_gqa or plan.written_only:
        use_packed_gqa(trainer.model, written_only=plan.written_only)
    if plan.written_only:
        trainer.cache_block = KV_BLOCK
    if plan.grouped_experts:
        use_grouped_experts(trainer.model)
    if plan.merge_adapter and not trainer.is_fsdp_enabled:
        trainer.merge_for_rollouts = MergedForRollouts()
    if plan.skip_guards:
        trainer.unguarded_decode = UnguardedDecode()
    trainer.deferred_stop = plan.deferred_stop


@contextmanager
def stop_checks_deferred() -> Iterator[None]:
    """While open, `generate` on a CUDA device checks whether to stop one step late, never waiting on the GPU.

    transformers' decode loop ends each step by reading whether every row has ended (and a streamer's tokens) on
    the host, which waits for the step's kernels to finish: the GPU then idles while the host launches the next
    step. On the 35B-A3B policy that was 18.7 ms of wall time for a 14.8 ms step on the GPU, the difference the
    CUDA graph's launch (docs/gpu.md). transformers has the remedy, `DeferredStopCheck`: the flag and tokens are
    copied without blocking and read on the next step, so one step is always queued ahead; a batch that ends runs
    one decode step more, which transformers undoes. It enables it only on Apple GPUs ("we should enable it for
    cuda if we observe perf gains"); this allows CUDA too, on the same conditions (not an assistant model, and a
    cache the caller gets back must be one it can crop). The CPU has no events to copy with, so it stays synced.
    """
    from transformers.generation.utils import DeferredStopCheck

    transformers_own = DeferredStopCheck.__dict__["is_supported"]

    def is_supported(device: Any, cache: Any, cache_is_returned: bool, is_assistant: bool) -> bool:
        if device.type != "cuda":
            return bool(transformers_own.__func__(device, cache, cache_is_returned, is_assistant))
        return not is_assistant and (cache is None or cache.is_croppable or not cache_is_returned)

    DeferredStopCheck.is_supported = staticmethod(is_supported)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        DeferredStopCheck.is_supported = transformers_own  # type: ignore[method-assign]


LATE = (
    "in a decode step of this rollout (checked when the rollout ended; training.generation=trl "
    "checks in the step itself)"
)


class MultinomialCheckedLate:
    """`torch.multinomial` for one sample, drawing what torch draws, with its checks read once at the end.

    torch's one-sample path checks the probabilities on the host before drawing (that none is inf, NaN or negative,
    and that no row sums to 0): two reads of the GPU's results (pytorch/pytorch#108968), so the host waits for every
    decode step to end before it can queue the next, even with the stop check deferred. The H100 profile of such a
    loop still had 67 waits of 11 ms on average in 48 steps. Here the draw is torch's own, the race of exponential
    clocks (`argmax(p / q)`, q ~ Exp(1), from the same generator, so the same token bit for bit), and the checks
    stay on the device, folded into one flag for the rollout and raised with torch's message when the context
    closes. Calls from other threads, and any other form of the call, go to torch's.
    """

    def __init__(self, original: Any) -> None:
        # torch's name and module on the stand-in: torch.compile, tracing a decode step while it stands in, walks
        # every torch function by name (`torch.overrides`) and failed on a nameless one (seen on the H100).
        functools.update_wrapper(self, original)
        self.original = original
        self.thread = threading.get_ident()
        self.flags: Any = None  # [a value inf, NaN or negative, a row summing to 0], on the probabilities' device

    def __call__(self, input: Any, num_samples: int, replacement: bool = False, **kwargs: Any) -> Any:
        import torch

        if num_samples != 1 or kwargs.get("out") is not None or threading.get_ident() != self.thread:
            return self.original(input, num_samples, replacement, **kwargs)
        clocks = torch.empty_like(input).exponential_(1, generator=kwargs.get("generator"))
        drawn = (input / clocks).argmax(-1, keepdim=True)
        # torch's two checks, as it writes them (a NaN fails the first: it is not below inf).
        flags = torch.stack([~((input.amax() < math.inf) & (input.amin() >= 0)), (input.sum(-1) == 0).any()])
        self.flags = flags if self.flags is None else self.flags | flags
        return drawn

    def raise_if_invalid(self) -> None:
        if self.flags is None:
            return
        invalid, empty = self.flags.tolist()
        if invalid:
            raise RuntimeError(f"probability tensor contains either `inf`, `nan` or element < 0 {LATE}")
        if empty:
            raise RuntimeError(f"invalid multinomial distribution (sum of probabilities <= 0) {LATE}")


@contextmanager
def multinomial_checked_late() -> Iterator[None]:
    """While open, this thread's one-sample `torch.multinomial` never reads the GPU (`MultinomialCheckedLate`)."""
    import torch

    # torch's table of overridable functions is built once and kept: built first while the stand-in stood in, it
    # would keep the stand-in for good.
    torch.overrides.get_overridable_functions()
    original = torch.multinomial
    sampler = MultinomialCheckedLate(original)
    torch.multinomial = sampler  # type: ignore[assignment]
    try:
        yield
    finally:
        torch.multinomial = original
    sampler.raise_if_invalid()


@contextmanager
def decode_without_waiting() -> Iterator[None]:
    """While open, a decode loop on a GPU never waits for its step to end: neither the stop check
    (`stop_checks_deferred`) nor the sampling (`multinomial_checked_late`) reads the step's results on the host."""
    with stop_checks_deferred(), multinomial_checked_late():
        yield


class UnguardedDecode:
    """Run a rollout's compiled decode steps without torch.compile's guards once these shapes have compiled them.

    Before every call of a compiled function dynamo evaluates the guards of its cached graphs (that the inputs'
    shapes, the model's modules and the global flags are what the graph was traced with): 3.2-3.7 ms of host time
    per decode step of the 35B-A3B policy on an H200, while the step's GPU work is about 20 ms (docs/gpu.md). A
    rollout whose key (rows, padded prompt length, token budget) was already generated once reuses the graphs
    traced then, so its steps are called under `skip_guard_eval_unsafe`: with one cached graph no guard runs, with
    several only those that tell them apart (the shapes). A rollout of a new key runs guarded and compiles, as
    before; the key is remembered only when that rollout ends without an error.
    """

    def __init__(self) -> None:
        self.compiled: set[tuple[int, ...]] = set()

    @contextmanager
    def __call__(self, key: tuple[int, ...]) -> Iterator[bool]:
        """Yields whether the guards are skipped for this rollout."""
        import torch

        if key not in self.compiled:
            yield False
            self.compiled.add(key)
            return
        torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)
        try:
            yield True
        finally:
            torch.compiler.set_stance("default", skip_guard_eval_unsafe=False)


def rollout_key(
    prompt_ids: list[list[int]],
    max_new_tokens: int,
    pad_multiple: int | None,
    cache_len: int | None = None,
    cache_floor: int = -1,
) -> tuple[int, ...]:
    """What fixes a rollout's compiled shapes: its rows, its prompt length as TRL pads it, its token budget, and the
    length of the static cache transformers will build for it: room for prompt and budget, at least the
    configuration's `max_cache_len` and at least the longest of the model's earlier static caches (`cache_floor`)."""
    longest = max((len(ids) for ids in prompt_ids), default=0)
    multiple = pad_multiple or 1
    padded = -(-longest // multiple) * multiple
    cache = max(padded + max_new_tokens - 1, cache_len or 0, cache_floor)
    return (len(prompt_ids), padded, max_new_tokens, cache)


@contextmanager
def input_grad_hooks_paused(model: Any, paused: bool = True) -> Iterator[None]:
    """Lift the embedding hooks that make inputs require grad (PEFT with gradient checkpointing) for a rollout.

    The hook calls `requires_grad_()`, which torch.compile cannot trace: inside the compiled decode step it broke
    the graph and made dynamo fall back to eager for parts of the forward (seen on the H200 with
    TORCH_LOGS=graph_breaks). Rollouts run under no_grad, so the hook does nothing useful there. It is found by
    name in each module's forward hooks, not through transformers' `_require_grads_hooks`: PEFT, TRL and every
    `gradient_checkpointing_enable` register one more, and that attribute only remembers the latest.
    """
    lifted: list[tuple[dict, int, Any]] = []
    if paused:
        for module in model.modules():
            hooks = module._forward_hooks
            for key, hook in list(hooks.items()):
                if getattr(hook, "__name__", "") == REQUIRE_GRADS_HOOK:
                    lifted.append((hooks, key, hook))
                    del hooks[key]
    try:
        yield
    finally:
        for hooks, key, hook in lifted:
            hooks[key] = hook
