"""One benchmark cell: GRPO steps of a random policy through the project's trainer, on one generation path.

The trainer is the one `watercolour train` builds (TimedGRPOTrainer, `grpo_args`, LoRA on every linear layer,
the generation plan of `watercolour.policy.generation`), given a model object instead of a name. The reward is a
stand-in that costs nothing and spreads rewards within each group, so advantages, the loss and the gradients
are as large as in a real step (a constant reward would zero them).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deployments.presets import load_config
from ground.run_config import RunConfig, TrainingSettings


if TYPE_CHECKING:
    from watercolour.policy.generation import GenerationPlan


@dataclass(frozen=True)
class BenchPath:
    """A generation path: the training settings it sets, and the levers it turns off of the plan those resolve to
    (`watercolour.policy.generation.GenerationPlan`), so a paired cell measures what one lever is worth."""

    settings: dict[str, Any] = field(default_factory=dict)
    off: tuple[str, ...] = ()

    def plan(self, training: TrainingSettings, cuda: bool | None = None) -> GenerationPlan:
        from watercolour.policy.generation import resolve

        return replace(resolve(training, cuda), **dict.fromkeys(self.off, False))


PATHS: dict[str, BenchPath] = {
    # TRL's default transformers path, as the trainer ran before the fast path existed.
    "default": BenchPath({"generation": "trl"}),
    # The trainer's own default: the fast path with a GPU, TRL's on CPU (watercolour.policy.generation.resolve).
    "fast": BenchPath(),
    # The defaults less one lever each, to see what it is worth: the float32 adapter attached to every decode
    # step, the grouped keys and values repeated per query head, and the experts' weights gathered.
    "fast-attached": BenchPath(off=("merge_adapter",)),
    "fast-repeated": BenchPath(off=("packed_gqa",)),
    # The defaults with the compiler's own lowering of an MoE layer's experts (a gather of the chosen weights).
    "fast-gathered": BenchPath(off=("grouped_experts",)),
    # The defaults with dynamo's guards evaluated before every decode step, as transformers calls it.
    "fast-guarded": BenchPath(off=("skip_guards",)),
    # The defaults with the whole static cache read by every decode step (sdpa over all of it, the rest masked).
    "fast-full-cache": BenchPath(off=("written_only",)),
    # The defaults with the host waiting for every decode step to end before it launches the next, as transformers
    # decodes on CUDA.
    "fast-synced": BenchPath(off=("deferred_stop",)),
    # The defaults with the update's Gated DeltaNet forwards through transformers' torch reference instead of the
    # project's, or through the project's with other chunk lengths (`UPDATE_RULES`), where the route sends them to torch
    # (fla absent, or wrong on this GPU).
    "fast-reference-update": BenchPath(),
    "fast-chunk-64": BenchPath(),
    "fast-chunk-256": BenchPath(),
    # The defaults with each update micro-batch as wide as TRL pads the whole group (`PADDED_UPDATE`).
    "fast-padded-update": BenchPath(),
    # The defaults with each decode step's Gated DeltaNet recurrence as torch 2.11 compiles transformers' call of it:
    # transformers' torch reference, not fla's kernel (`TORCH_RECURRENCE`).
    "fast-torch-recurrence": BenchPath(),
    # The defaults with rollouts pipelined across steps: a freed slot starts a row of the next two steps at once
    # (`watercolour.pipeline.rollouts`).
    "fast-pipelined": BenchPath({"pipeline": {"max_staleness": 2}}),
    # The defaults before the skipped guards and the written cache blocks.
    "fast-before": BenchPath(off=("skip_guards", "written_only")),
}


def transformers_reference() -> Any:
    from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as modeling

    return modeling.torch_chunk_gated_delta_rule.__wrapped__


def chunks_of(size: int) -> Callable[[], Any]:
    def rule() -> Any:
        from watercolour.policy.gated_delta_rule import chunk_gated_delta_rule

        return partial(chunk_gated_delta_rule, chunk_size=size)

    return rule


# A path whose update runs TRL's micro-batches uncut (`trimmed` in watercolour/training/trainer.py): the padding's cost.
PADDED_UPDATE = "fast-padded-update"


# Paths whose difference is in the bench's process, not in the run configuration: the update's Gated DeltaNet rule.
UPDATE_RULES: dict[str, Callable[[], Any]] = {
    "fast-reference-update": transformers_reference,
    "fast-chunk-64": chunks_of(64),
    "fast-chunk-256": chunks_of(256),
}


# A path whose decode steps call transformers' function for the one-token recurrence, as before the project called
# fla's kernel itself (watercolour/policy/linear_attention.py).
TORCH_RECURRENCE = "fast-torch-recurrence"


@contextmanager
def path_kernels(path: str) -> Iterator[None]:
    """On a path of `UPDATE_RULES`, the forwards that record a gradient through the Gated DeltaNet layers run that
    path's rule (transformers' reference, as the update did before the project's own, or the project's with another
    chunk length); on `TORCH_RECURRENCE`, decode steps call transformers' function again where the route sent them to
    fla's kernel; on any other, nothing changes."""
    import sys

    from watercolour.policy import linear_attention

    saved_rule = linear_attention.chunk_gated_delta_rule
    restored: list[tuple[Any, Any]] = []
    if path in UPDATE_RULES:
        linear_attention.chunk_gated_delta_rule = UPDATE_RULES[path]()
    if path == TORCH_RECURRENCE:
        for module in list(sys.modules.values()):
            # What the module itself holds: a lazy module's __getattr__ would import or raise.
            routed = vars(module).get(linear_attention.RECURRENT_FUNCTION)
            if isinstance(routed, linear_attention.FlaRecurrence):
                restored.append((module, routed))
                setattr(module, linear_attention.RECURRENT_FUNCTION, routed.replaced)
    try:
        yield
    finally:
        linear_attention.chunk_gated_delta_rule = saved_rule
        for module, routed in restored:
            setattr(module, linear_attention.RECURRENT_FUNCTION, routed)


def spread_reward(prompts: list[Any], completions: list[Any], completion_ids: list[list[int]], **_: Any) -> list:
    """A deterministic reward in [0, 1) from each completion's tokens: instant, and never constant in a group."""
    return [zlib.crc32(bytes(str(ids), "ascii")) % 1000 / 1000.0 for ids in completion_ids]


spread_reward.__name__ = "bench_spread_reward"


def bench_config(
    generations: int,
    max_len: int,
    micro_batch: int,
    path: str,
    run_dir: Path,
    render: dict[str, Any] | None = None,
    preset: str = "offline",
    services: dict[str, Any] | None = None,
) -> RunConfig:
    """The preset's configuration with the cell's group, budget, micro-batch and generation path; `services`
    overrides its backends (the recipe cell points them at loopback servers)."""
    training: dict[str, Any] = {
        "num_generations": generations,
        "max_completion_length": max_len,
        # One group a step, generated in one call, updated in micro-batches of `micro_batch` sequences.
        "per_device_batch_size": micro_batch,
        "gradient_accumulation_steps": generations // micro_batch,
        "steps": 100,
        "save_steps": 10_000,
        "warmup_steps": 0,
        **PATHS[path].settings,
    }
    overrides = {"run_dir": str(run_dir), "training": training, "render": render or {}, **(services or {})}
    return load_config(preset, overrides)


def make_trainer(
    model: Any, tokenizer: Any, config: RunConfig, steps: int, reward: Any = spread_reward, path: str = "fast"
) -> Any:
    """The project's trainer around `model` on a generation path, without trackio (it is not on the GPU machine) or
    checkpoints."""
    from watercolour.pipeline.rollouts import pipelined
    from watercolour.policy.generation import prepare_rollouts
    from watercolour.policy.linear_attention import route_gated_delta_rule
    from watercolour.policy.lora import lora_config
    from watercolour.training.trainer import TimedGRPOTrainer, grpo_args, prompt_dataset

    plan = PATHS[path].plan(config.training)
    args = grpo_args(config, Path(config.run_dir), plan)
    args.report_to = []
    args.max_steps = steps
    trainer = TimedGRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=prompt_dataset(config.training),
        processing_class=tokenizer,
        peft_config=lora_config(config.training),
    )
    prepare_rollouts(trainer, plan)
    if config.training.pipeline.max_staleness:
        trainer.pipeline = pipelined(trainer, config.training, plan)
    trainer.gated_delta_route = route_gated_delta_rule(trainer.model)
    trainer.generation_plan = asdict(plan)
    trainer.early_scoring = plan.early_scoring
    return trainer


def step_recorder(trainer: Any, record: Callable[[dict], None]) -> None:
    """Calls `record` with each step's time split once the step is logged."""
    import torch
    from transformers import TrainerCallback

    class Recorder(TrainerCallback):
        started = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            torch.cuda.synchronize() if torch.cuda.is_available() else None
            self.started = time.perf_counter()

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            if not logs or "time/generate_s" not in logs:
                return
            torch.cuda.synchronize() if torch.cuda.is_available() else None
            step_s = time.perf_counter() - self.started
            tokens = logs["completions/mean_length"] * args.num_generations
            generate_s, score_s = logs["time/generate_s"], logs["time/score_s"]
            longest = int(logs["completions/max_length"])
            # A batch decodes until its longest row ends; pipelined rollouts count their decode steps.
            decoded = int(logs.get("pipeline/decode_steps", longest))
            record(
                {
                    "step": state.global_step,
                    "longest": longest,
                    "decode_steps": decoded,
                    "decode_fill": logs.get("pipeline/fill"),
                    "decode_ms": round(1000 * generate_s / decoded, 2),
                    "generate_s": round(generate_s, 2),
                    "score_s": round(score_s, 3),
                    # Of that wait, the last painting still scoring ahead after generation (None: none ahead).
                    "ahead_tail_s": round(logs["time/ahead_tail_s"], 3) if "time/ahead_tail_s" in logs else None,
                    "update_s": round(step_s - generate_s - score_s, 2),
                    "step_s": round(step_s, 2),
                    "tokens": int(tokens),
                    "tokens_per_s": round(tokens / generate_s, 1),
                    "loss": logs.get("loss"),
                    "early_scoring": trainer.early_scoring,
                    "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1)
                    if torch.cuda.is_available()
                    else None,
                }
            )

    trainer.add_callback(Recorder())


def checkpoint_recorder(trainer: Any, record: Callable[[dict], None]) -> None:
    """Calls `record` with how long each checkpoint save took (adapter, optimizer and trainer state)."""
    save = trainer._save_checkpoint

    def timed_save(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return save(*args, **kwargs)
        finally:
            record(
                {
                    "checkpoint_after_step": trainer.state.global_step,
                    "checkpoint_s": round(time.perf_counter() - started, 2),
                }
            )

    trainer._save_checkpoint = timed_save
