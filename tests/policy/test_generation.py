"""Generation settings: how they resolve per device, what they hand TRL, and the hook lifted for compilation."""

from __future__ import annotations

import math
import os
import traceback
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from ground.run_config import TrainingSettings
from watercolour.policy.generation import (
    FAST_PATH,
    TRL_PATH,
    GenerationPlan,
    UnguardedDecode,
    decode_without_waiting,
    enable_compile,
    grpo_kwargs,
    input_grad_hooks_paused,
    multinomial_checked_late,
    resolve,
    rollout_key,
    stop_checks_deferred,
)


def test_an_unset_choice_is_the_fast_path_on_a_gpu_and_trls_on_cpu() -> None:
    training = TrainingSettings()
    # No prompt padding on the fast path: left padding under the compiled decode step sampled from NaN probabilities
    # on the H200 (docs/gpu.md).
    assert resolve(training, cuda=True) == GenerationPlan(
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
    assert resolve(training, cuda=True) == FAST_PATH
    assert resolve(training, cuda=False) == TRL_PATH
    assert TRL_PATH == GenerationPlan(cache="dynamic", compile=False, pad_multiple=None)
    assert grpo_kwargs(TRL_PATH) == {"cache_implementation": None, "pad_to_multiple_of": None}
    assert grpo_kwargs(FAST_PATH) == {"cache_implementation": "static", "pad_to_multiple_of": None}
    padded = GenerationPlan(cache="static", compile=True, pad_multiple=64)
    assert grpo_kwargs(padded) == {"cache_implementation": "static", "pad_to_multiple_of": 64}


def test_a_chosen_path_is_the_same_on_any_device() -> None:
    for cuda in (True, False):
        assert resolve(TrainingSettings(generation="trl"), cuda=cuda) == TRL_PATH
        assert resolve(TrainingSettings(generation="fast"), cuda=cuda) == FAST_PATH


def test_enable_compile_lifts_trls_disable_flag_only_when_planned() -> None:
    trainer = SimpleNamespace(generation_config=GenerationConfig(disable_compile=True))
    enable_compile(trainer, GenerationPlan(cache="static", compile=False, pad_multiple=None))
    assert trainer.generation_config.disable_compile is True
    enable_compile(trainer, GenerationPlan(cache="static", compile=True, pad_multiple=64))
    assert trainer.generation_config.disable_compile is False
    assert trainer.generation_config.compile_config.mode == "reduce-overhead"


def _hook_count(model: torch.nn.Module) -> int:
    return sum(len(module._forward_hooks) for module in model.modules())


def test_every_require_grads_hook_is_lifted_for_the_rollout_and_put_back() -> None:
    # torch 2.11 (the GPU image) breaks the compiled graph at this hook; torch 2.13 here traces it, so the test
    # checks what the pause does (every copy gone, a one-graph compile, all restored), not torch's behaviour.
    config = LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
    )
    model = LlamaForCausalLM(config)
    # Registered twice, as PEFT/TRL and gradient checkpointing do; only the last is remembered by transformers.
    model.enable_input_require_grads()
    model.enable_input_require_grads()
    assert _hook_count(model) == 2
    ids = torch.tensor([[1, 2, 3]])

    def forward(input_ids: torch.Tensor) -> torch.Tensor:
        return model(input_ids=input_ids).logits

    with torch.no_grad():
        with input_grad_hooks_paused(model):
            assert _hook_count(model) == 0
            torch.compile(forward, backend="eager", fullgraph=True)(ids)
    torch._dynamo.reset()
    assert _hook_count(model) == 2
    with input_grad_hooks_paused(model, paused=False):
        assert _hook_count(model) == 2


def test_the_trainers_arguments_keep_trls_default_path_on_cpu(tmp_path: Path) -> None:
    from deployments.presets import load_config
    from watercolour.training.trainer import grpo_args

    args = grpo_args(load_config("smoke"), tmp_path)
    assert args.cache_implementation is None and args.pad_to_multiple_of is None
    fast = grpo_args(load_config("smoke", {"training.generation": "fast"}), tmp_path)
    assert fast.cache_implementation == "static" and fast.pad_to_multiple_of is None


FACTOR = 1  # a global the compiled function reads: dynamo guards on its value


def scaled(x: torch.Tensor) -> torch.Tensor:
    return x * FACTOR


def test_a_rollout_of_compiled_shapes_skips_the_guards_and_a_new_one_compiles_guarded() -> None:
    global FACTOR
    unguarded = UnguardedDecode()
    step = torch.compile(scaled, backend="eager", dynamic=False)
    x = torch.ones(3)
    key = rollout_key([[1, 2, 3], [4, 5]], max_new_tokens=64, pad_multiple=None)
    assert key == (2, 3, 64, 66)
    assert rollout_key([[1, 2, 3], [4, 5]], 64, pad_multiple=8) == (2, 8, 64, 71)
    assert rollout_key([[1, 2, 3], [4, 5]], 64, pad_multiple=8, cache_len=128) == (2, 8, 64, 128)
    assert rollout_key([[1, 2, 3], [4, 5]], 64, pad_multiple=8, cache_len=128, cache_floor=512) == (2, 8, 64, 512)
    try:
        with unguarded(key) as skipped:
            assert skipped is False
            assert step(x).tolist() == [1.0, 1.0, 1.0]
        FACTOR = 2
        with unguarded(key) as skipped:
            # The guards would see the new value and recompile; skipped, the graph traced for this key runs.
            assert skipped is True
            assert step(x).tolist() == [1.0, 1.0, 1.0]
        with unguarded((2, 4, 64, 67)) as skipped:
            assert skipped is False  # new shapes: guarded, so the change is seen
            assert step(x).tolist() == [2.0, 2.0, 2.0]
        FACTOR = 3
        assert step(x).tolist() == [3.0, 3.0, 3.0]  # the guards are back after a rollout
        with pytest.raises(RuntimeError), unguarded((1, 1, 1, 1)):
            raise RuntimeError("the rollout failed")
        assert (1, 1, 1, 1) not in unguarded.compiled  # a failed rollout compiled nothing to trust
        with pytest.raises(RuntimeError), unguarded(key):
            raise RuntimeError("the rollout failed")
        FACTOR = 4
        assert step(x).tolist() == [4.0, 4.0, 4.0]  # ... and after one that failed unguarded
    finally:
        FACTOR = 1
        torch._dynamo.reset()


@pytest.mark.browser
def test_a_compiled_plan_sizes_the_cache_in_blocks_and_skips_guards_from_the_second_rollout(tmp_path: Path) -> None:
    """The compiled plan's levers as the trainer applies them, on CPU (where transformers compiles nothing, so the
    decode steps run eagerly through the same code): written-only attention with a cache of whole blocks, and the
    second rollout of the same shapes called under the skipped guards."""
    import os

    from deployments.presets import load_config
    from tests.models import tiny_smoke_overrides
    from watercolour.policy.attention import KV_BLOCK, WRITTEN_ONLY
    from watercolour.training.trainer import build_trainer, close_reward

    os.environ.setdefault("TRACKIO_DIR", str(tmp_path / "trackio"))
    config = load_config("smoke", tiny_smoke_overrides(tmp_path, 2, 2))
    compiled = replace(FAST_PATH, early_scoring=False, merge_adapter=False)  # the decode-step levers alone
    trainer = build_trainer(config, tmp_path, False, plan=compiled)
    assert trainer.unguarded_decode is not None and trainer.cache_block == KV_BLOCK
    assert trainer.deferred_stop  # planned; on CPU transformers' own check keeps the loop synced (no events)
    assert trainer.model.config._attn_implementation == WRITTEN_ONLY
    skipped: list[bool] = []

    class Watched(UnguardedDecode):
        @contextmanager
        def __call__(self, key: tuple[int, ...]) -> Iterator[bool]:
            with super().__call__(key) as skip:
                skipped.append(skip)
                yield skip

    trainer.unguarded_decode = unguarded = Watched()
    try:
        trainer.train()
    finally:
        close_reward(trainer)
    assert skipped == [False, True]
    (key,) = unguarded.compiled
    cache = trainer.model._previous_max_cache_length
    assert cache % KV_BLOCK == 0 and cache == key[3] >= key[1] + key[2]


def tiny_llama(device: str) -> tuple[Any, torch.Tensor]:
    """A two-layer Llama (EOS 5, pad 0) and a batch of 4 prompts of 7 tokens on `device`."""
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=96, eos_token_id=5, pad_token_id=0,
    )  # fmt: skip
    return LlamaForCausalLM(config).to(device).eval(), torch.randint(6, 96, (4, 7), device=device)


def test_stop_checks_are_deferred_on_cuda_only_while_open_and_on_transformers_conditions() -> None:
    from transformers.generation.utils import DeferredStopCheck

    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    uncroppable = SimpleNamespace(is_croppable=False)
    assert not DeferredStopCheck.is_supported(cuda, None, False, is_assistant=False)  # transformers: Apple GPUs only
    with stop_checks_deferred():
        assert DeferredStopCheck.is_supported(cuda, None, False, is_assistant=False)
        assert DeferredStopCheck.is_supported(cuda, uncroppable, False, is_assistant=False)  # a cache not returned
        assert not DeferredStopCheck.is_supported(cuda, uncroppable, True, is_assistant=False)  # cannot undo a step
        assert not DeferredStopCheck.is_supported(cuda, None, False, is_assistant=True)
        assert not DeferredStopCheck.is_supported(cpu, None, False, is_assistant=False)  # no events to copy with
    assert not DeferredStopCheck.is_supported(cuda, None, False, is_assistant=False)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_deferred_stop_samples_the_same_tokens_and_streams_every_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU: the same seed gives the same sequences with the stop check deferred, rows that end early included,
    and a streamer still receives every generated token."""
    from transformers.generation.streamers import BaseStreamer
    from transformers.generation.utils import DeferredStopCheck

    deferred_checks: list[DeferredStopCheck] = []
    transformers_init = DeferredStopCheck.__init__

    def counted_init(self: DeferredStopCheck, *args: Any, **kwargs: Any) -> None:
        deferred_checks.append(self)
        transformers_init(self, *args, **kwargs)

    monkeypatch.setattr(DeferredStopCheck, "__init__", counted_init)

    model, inputs = tiny_llama("cuda")

    class Tokens(BaseStreamer):
        def __init__(self) -> None:
            self.steps: list[list[int]] = []

        def put(self, value: torch.Tensor) -> None:
            self.steps.append(value.reshape(-1).tolist())

        def end(self) -> None:
            pass

    def sample(deferred: bool) -> tuple[torch.Tensor, Tokens]:
        torch.manual_seed(1)
        streamer = Tokens()
        generation = GenerationConfig(do_sample=True, max_new_tokens=40, eos_token_id=5, pad_token_id=0)
        with torch.no_grad(), stop_checks_deferred() if deferred else nullcontext():
            return model.generate(inputs, generation_config=generation, streamer=streamer), streamer

    synced, synced_stream = sample(False)
    deferred, deferred_stream = sample(True)
    assert len(deferred_checks) == 1  # the second call only
    assert torch.equal(synced, deferred)
    assert deferred_stream.steps == synced_stream.steps
    assert len(deferred_stream.steps) == 1 + deferred.shape[1] - inputs.shape[1]  # the prompt, then every step


class HostReads(TorchDispatchMode):
    """Which aten operations a block dispatches, and where in Python each read of a tensor's value on the host
    (`_local_scalar_dense`: `.item()`, `bool()`, `.tolist()` of one value; on a GPU, a wait for the GPU) came from."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []
        # Each read: the innermost Python function outside torch that asked for the value, and whether it was
        # inside transformers' decode loop (`_sample`).
        self.reads: list[tuple[str, bool]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.append(str(func.overloadpacket))
        if func.overloadpacket is torch.ops.aten._local_scalar_dense:
            stack = [f for f in traceback.extract_stack()[:-1] if f"{os.sep}torch{os.sep}" not in f.filename]
            where = f"{Path(stack[-1].filename).parent.name}/{Path(stack[-1].filename).name}:{stack[-1].name}"
            self.reads.append((where, any(f.name == "_sample" for f in stack)))
        return func(*args, **(kwargs or {}))


def probabilities() -> torch.Tensor:
    logits = torch.randn(8, 1000, generator=torch.Generator().manual_seed(5))
    logits[:, ::3] = -math.inf  # zero probabilities, as top-k and top-p leave them
    return logits.softmax(-1)


def test_a_late_checked_draw_is_torchs_own_token_without_reading_the_device() -> None:
    probs = probabilities()
    for generator in (None, torch.Generator().manual_seed(11)):
        torch.manual_seed(3)
        state = generator.get_state() if generator is not None else None
        expected = [torch.multinomial(p, num_samples=1, generator=generator) for p in (probs, probs[0])]
        torch.manual_seed(3)
        if generator is not None:
            generator.set_state(state)
        with multinomial_checked_late(), HostReads() as seen:
            drawn = [torch.multinomial(p, num_samples=1, generator=generator) for p in (probs, probs[0])]
        assert all(torch.equal(a, b) for a, b in zip(drawn, expected, strict=True))
        assert "aten.multinomial" not in seen.ops and seen.reads == []
    assert torch.multinomial.__module__ == "torch"  # put back


def test_invalid_probabilities_raise_torchs_error_when_the_rollout_ends_not_in_its_steps() -> None:
    nan_row, empty_row = probabilities(), probabilities()
    nan_row[2, 1] = math.nan
    empty_row[5] = 0.0
    for probs, message in ((nan_row, "contains either `inf`, `nan` or element < 0"), (empty_row, "sum of prob")):
        with pytest.raises(RuntimeError, match=message):
            torch.multinomial(probs, num_samples=1)  # torch's own check, in the step
        steps = 0
        with pytest.raises(RuntimeError, match=message), multinomial_checked_late():
            for _ in range(3):
                torch.multinomial(probs, num_samples=1)
                steps += 1
        assert steps == 3


def test_other_threads_and_other_draws_keep_torchs_multinomial() -> None:
    probs = probabilities()
    with multinomial_checked_late():
        with HostReads() as seen:
            torch.multinomial(probs, num_samples=2)  # two samples: torch's
        assert "aten.multinomial" in seen.ops
        with ThreadPoolExecutor(1) as pool:
            other = pool.submit(lambda: torch.multinomial(probs.clone(), num_samples=1)).result()
        assert other.shape == (8, 1)
        with HostReads() as seen:
            torch.multinomial(probs, num_samples=1)
        assert "aten.multinomial" not in seen.ops


def test_a_decode_loop_without_waiting_reads_the_host_only_for_its_stop_check_on_cpu() -> None:
    """The loop's one read a step on CPU is transformers' stop check, which a GPU defers (no events on a CPU);
    sampling reads nothing and draws the same tokens as torch's multinomial."""
    model, inputs = tiny_llama("cpu")
    generation = GenerationConfig(do_sample=True, max_new_tokens=12, min_new_tokens=12, eos_token_id=5, pad_token_id=0)

    def sample(without_waiting: bool) -> tuple[torch.Tensor, HostReads]:
        torch.manual_seed(1)
        with torch.no_grad(), decode_without_waiting() if without_waiting else nullcontext(), HostReads() as seen:
            return model.generate(inputs, generation_config=generation), seen

    synced, synced_seen = sample(False)
    sequences, seen = sample(True)
    assert torch.equal(sequences, synced)
    assert synced_seen.ops.count("aten.multinomial") == 12  # torch's, once a step, reading the step's result
    assert seen.ops.count("aten.multinomial") == 0
    # transformers' StopCheck, once a step; torch's multinomial reads inside C++, out of this mode's sight.
    assert [where for where, in_loop in seen.reads if in_loop] == ["generation/utils.py:__call__"] * 12


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_decode_loop_without_waiting_never_waits_for_its_steps_on_a_gpu() -> None:
    """On a GPU the host reads a step's result (which drains the GPU's queue) at least once a step when synced, and
    only around the loop without waiting, where it waits on the step before instead; the sequences are the same."""
    from torch.profiler import ProfilerActivity, profile

    model, inputs = tiny_llama("cuda")
    steps = 40
    generation = GenerationConfig(
        do_sample=True, max_new_tokens=steps, min_new_tokens=steps, eos_token_id=5, pad_token_id=0
    )

    def sample(without_waiting: bool) -> tuple[torch.Tensor, int]:
        torch.manual_seed(1)
        with (
            torch.no_grad(),
            decode_without_waiting() if without_waiting else nullcontext(),
            profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof,
        ):
            sequences = model.generate(inputs, generation_config=generation)
        return sequences, sum(event.count for event in prof.key_averages() if event.key == "cudaStreamSynchronize")

    synced, synced_waits = sample(False)
    sequences, waits = sample(True)
    assert torch.equal(sequences, synced)
    assert synced_waits >= steps
    assert waits < steps // 4


def test_torch_compile_traces_a_step_while_the_late_checked_draw_stands_in() -> None:
    """The first compiled decode step of a process is traced inside the context (the H100 failed there: dynamo walks
    torch's functions by name); a fresh interpreter, so torch's tables of functions are built inside it."""
    import subprocess
    import sys

    code = (
        "import torch\n"
        "from watercolour.policy.generation import multinomial_checked_late\n"
        "def f(x):\n"
        "    return x.sin() + 1 if torch.compiler.is_compiling() else x.sin()\n"
        "with multinomial_checked_late():\n"
        "    print(torch.compile(f)(torch.zeros(3)).tolist())\n"
        "assert torch.multinomial in torch.overrides.get_overridable_functions()[torch]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[1.0, 1.0, 1.0]"
