"""TRL's GRPOTrainer, built from the run configuration and wired to the one reward adapter, the rollout store,
the curves and trackio. The run around it (where it resumes, what it leaves behind) is `watercolour.training.run`.

This module imports torch, transformers and TRL at the top: it is only ever imported by code that is about to
train. trackio reads `TRACKIO_DIR` when it is first imported (TRL imports it), so whoever imports this module
sets that variable first (`watercolour.run_records.run_dir.use_run_environment`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoTokenizer, ProgressCallback
from trl import GRPOConfig, GRPOTrainer

from ground.prompt import messages
from ground.records import rollout_step
from ground.run_config import RunConfig, TrainingSettings
from rewards.scoring.composite import CompositeReward, OnScored
from rewards.scoring.scoring_engine import log_means
from watercolour.pipeline.importance import ImportanceFromLoss
from watercolour.pipeline.rollouts import IMPORTANCE_MODE, PipelinedRollouts, pipelined
from watercolour.policy.adapter import load_policy
from watercolour.policy.early_scoring import Prefetches, scoring_during_generation
from watercolour.policy.generation import (
    GenerationPlan,
    UnguardedDecode,
    decode_without_waiting,
    grpo_kwargs,
    input_grad_hooks_paused,
    prepare_rollouts,
    resolve,
    rollout_key,
)
from watercolour.policy.linear_attention import ROUTE_LINES, route_gated_delta_rule
from watercolour.policy.loading import resolve_model, set_cpu_threads
from watercolour.policy.lora import device_settings, lora_config
from watercolour.policy.rollout_weights import MergedForRollouts
from watercolour.policy.tool_chat import use_tool_template
from watercolour.rehearsal.lengths import force_lengths
from watercolour.rehearsal.shapes import shape_name, shape_policy
from watercolour.run_records.curves import CurvesFile
from watercolour.run_records.rollout_store import RolloutStore
from watercolour.run_records.run_dir import CHECKPOINTS_DIR
from watercolour.run_records.trainer_callbacks import (
    DEAD_LETTER_ROWS,
    TRL_GRPO_LOGGER,
    CurvesCallback,
    Echo,
    QuietProgress,
    tell,
)
from watercolour.training.distributed import ScoredSlices, per_process_config, refuse_repaint_in_processes
from watercolour.training.paint_ahead import episode_seeds, render_ahead
from watercolour.training.repaint_reward import RepaintReward, StepClock, close_episodes, episode_factory
from watercolour.training.scoring_route import FanOut, describe, reward_for
from watercolour.upstream.seams import check_upstream


# Each checkpoint holds the adapter plus Adam's two moments; a few is enough to step back from a bad save.
KEEP_CHECKPOINTS = 3
# A tool-loop turn's token cap is rounded up to this, so a static, compiled cache sees few distinct lengths.
GENERATION_CAP_MULTIPLE = 64

# (config, run_dir, then) -> what each scored step is handed to, which hands it on to `then` (the rollout store;
# None for a repaint run, whose episodes are recorded by the reward itself): the Prefect run's step artifacts.
StepHookFactory = Callable[[RunConfig, Path, OnScored | None], OnScored]


class TimedGRPOTrainer(GRPOTrainer):
    """GRPOTrainer that logs where a step's time goes: generating and scoring (the update is the rest).

    TRL times these phases too, but sends the timings straight to the trackers, past the callbacks that write
    the curves; wrapping its two phase methods puts them in the step's logs instead.

    In several processes (`slices` set), scoring ends with the step's gather: every process's scored slice goes
    to the main process, which records the whole step in the store and logs its reward metrics once
    (`watercolour.training.distributed`).

    Its overrides of TRL's private methods are listed, with the signatures they were written against, in
    `watercolour.upstream.seams`; building one on other TRL or transformers versions is refused there.
    """

    slices: ScoredSlices | None = None
    store: RolloutStore | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        check_upstream()
        super().__init__(*args, **kwargs)

    def _record_time(self, name: str, started: float) -> None:
        # Runs have no eval set, so every generation belongs to a training step.
        self._metrics["train"][f"time/{name}_s"].append(time.perf_counter() - started)

    # Score each completion as soon as it ends (`watercolour.policy.early_scoring`); set from the generation plan.
    early_scoring = False
    # The dataset rows of the batch being generated (TRL's `inputs`): their columns go to the reward with each row.
    _batch_rows: list[dict[str, Any]] | None = None

    # Pipelined rollouts' importance ratios from the loss's own forward, not TRL's extra one before the update
    # (`watercolour.pipeline.importance`); None: TRL's own path.
    importance_from_loss: ImportanceFromLoss | None = None

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> Any:
        self._batch_rows = inputs
        correction = self.importance_from_loss
        try:
            with correction.generating(self) if correction is not None else nullcontext():
                return super()._generate_and_score_completions(inputs)
        finally:
            self._batch_rows = None

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        correction = self.importance_from_loss
        with correction.in_loss(inputs) if correction is not None else nullcontext():
            return super()._compute_loss(model, inputs)

    def _get_per_token_logps_and_entropies(self, *args: Any, **kwargs: Any) -> Any:
        result = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if self.importance_from_loss is not None:
            self.importance_from_loss.weigh(result[0])
        return result

    # Cut each update micro-batch to the columns its rows hold (`trimmed`); off only to measure what the padding
    # costs.
    trim_micro_batches = True

    def _prepare_inputs(self, generation_batch: Any) -> Any:
        inputs = super()._prepare_inputs(generation_batch)
        training = self.model is not None and self.model.training
        return trimmed(inputs) if self.trim_micro_batches and training else inputs

    # Decode rollouts with the LoRA merged into the weights (`watercolour.policy.rollout_weights`); set from the plan.
    merge_for_rollouts: MergedForRollouts | None = None

    def rollout_weights(self) -> AbstractContextManager[None]:
        """The policy's weights as rollouts decode with them: merged for the rollout, restored bit for bit after."""
        return self.merge_for_rollouts(self.model) if self.merge_for_rollouts is not None else nullcontext()

    # Rollouts pipelined across steps (`watercolour.pipeline.rollouts`); set when `training.pipeline.max_staleness`
    # is above 0. Their early scoring is their own; `row_stops` (a rehearsal's drawn lengths) ends their rows.
    pipeline: PipelinedRollouts | None = None
    row_stops: Callable[[int, int], list[int]] | None = None
    # The prompts of the batch being generated (TRL's, before its chat template): for the pipeline's early scoring.
    _batch_prompts: list[Any] | None = None

    def _generate(self, prompts: list) -> Any:
        started = time.perf_counter()
        # With tools the first reply is not the completion (the tool loop carries on from it): render it only.
        rows = None if self.tools else self._batch_rows
        streamed = self.early_scoring and self.pipeline is None
        ahead: Prefetches | None = None
        self._batch_prompts = prompts
        try:
            with (
                input_grad_hooks_paused(self.model, paused=not self.generation_config.disable_compile),
                self.rollout_weights(),
                scoring_during_generation(self, prompts, rows) if streamed else nullcontext() as ahead,
            ):
                return super()._generate(prompts)
        finally:
            self._record_time("generate", started)
            if self.pipeline is not None:
                ahead = self.pipeline.scored_ahead
            self._scored_ahead = (ahead, time.perf_counter()) if ahead is not None else None
            self._batch_prompts = None

    # The last generation's prefetches and when it ended: the reward's wait splits into the paintings still
    # scoring ahead after generation (`time/ahead_tail_s`) and the reward call's own time.
    _scored_ahead: tuple[Prefetches, float] | None = None

    # Compiled decode steps of shapes already compiled run without their guards; set from the generation plan.
    unguarded_decode: UnguardedDecode | None = None
    # Key positions per block of the decode step's written-only attention: the static cache is sized in whole blocks.
    cache_block = 0
    # Decode without waiting on the GPU every step (`decode_without_waiting`); set from the generation plan.
    deferred_stop = False

    # The longest prompt of the batch being generated, and whether TRL's tool loop is running (repaint episodes).
    _longest_prompt = 0
    _in_tool_loop = False
    # Tokens one repaint turn may generate (`repaint.turn_tokens`); None: up to the episode's whole budget.
    turn_tokens: int | None = None
    # A repaint run's `ScoringEngine.prefetch` (`watercolour.training.paint_ahead`), and the last turn's prefetches.
    paint_ahead: Callable[..., Any] | None = None
    painting_ahead: list[Any] = []

    # The batch's tokenized prompts, in the order of its rows (repaint: to tell a turn's rows their episodes).
    _batch_prompt_ids: list[list[int]] | None = None

    def _tokenize_prompts(self, prompts: list) -> Any:
        prompt_ids, *rest = super()._tokenize_prompts(prompts)
        self._longest_prompt = max(len(ids) for ids in prompt_ids)
        self._batch_prompt_ids = [list(ids) for ids in prompt_ids]
        return (prompt_ids, *rest)

    def _episode_seeds(self, prompt_ids: list) -> list[int | None]:
        """The group seed of each row's episode (`paint_ahead.episode_seeds`); None where the batch is not known."""
        rows, batch_ids = self._batch_rows, self._batch_prompt_ids
        if rows is None or batch_ids is None or len(rows) != len(batch_ids):
            return [None] * len(prompt_ids)
        return episode_seeds(prompt_ids, batch_ids, [row.get("prompt") for row in rows], rollout_step(self.state))

    def block_cache_len(self, prompt_ids: list) -> int:
        """The static cache's length for a rollout of these prompts when a decode step attends only over the written
        blocks: room for the longest prompt and the budget, in whole blocks (docs/gpu.md)."""
        return round_up(max(len(ids) for ids in prompt_ids) + self.generation_config.max_new_tokens, self.cache_block)

    def _tool_call_loop(self, *args: Any, **kw: Any) -> Any:
        self._in_tool_loop = True
        try:
            return super()._tool_call_loop(*args, **kw)
        finally:
            self._in_tool_loop = False

    def _generate_single_turn(
        self, prompt_ids: Any, images: Any, multimodal_fields: Any, *args: Any, **kw: Any
    ) -> Any:
        if self.pipeline is not None:
            return self.pipeline.generate(self, [list(ids) for ids in prompt_ids])
        # TRL hands `generate` every output of a VLM's image processor, which for Gemma 3 includes `num_crops`, an
        # input its model does not take (a repaint tool result's picture then fails the generate call).
        inputs = generation_inputs(self.model, multimodal_fields)
        budget = self.generation_config.max_new_tokens
        # A repaint turn's own cap (`repaint.turn_tokens`): without it the first painting may run to the episode's
        # whole budget, and a batch's turn lasts as many decoding steps as its longest reply.
        cap = budget if self.turn_tokens is None else min(budget, self.turn_tokens)
        if self._in_tool_loop:
            # After a tool result TRL generates up to `max_new_tokens` (the whole completion budget) and then cuts the
            # reply to the budget the episode has left: a policy that rambles after an observation ran the full 1280
            # tokens for nothing. Cap the turn at what the episode with the most budget left can keep.
            left = budget + self._longest_prompt - min(len(ids) for ids in prompt_ids)
            cap = min(cap, round_up(left, GENERATION_CAP_MULTIPLE))
        self.generation_config.max_new_tokens = max(1, cap)
        if self.cache_block:
            self.generation_config.max_cache_len = self.block_cache_len(prompt_ids)
        config = self.generation_config
        floor = getattr(self.model, "_previous_max_cache_length", -1)
        multiple = self.pad_to_multiple_of  # TRL types it loosely; the configuration gives an int or None
        key = rollout_key(
            prompt_ids, config.max_new_tokens, int(multiple) if multiple else None, config.max_cache_len, floor
        )
        # Pictures (a vision policy's tool results) change what the step is traced with beyond the key: guarded.
        unguarded = None if inputs or any(images or []) else self.unguarded_decode
        try:
            with (
                unguarded(key) if unguarded is not None else nullcontext(),
                decode_without_waiting() if self.deferred_stop else nullcontext(),
            ):
                completion_ids, logprobs = super()._generate_single_turn(prompt_ids, images, inputs, *args, **kw)
        finally:
            self.generation_config.max_new_tokens = budget
        if self.paint_ahead is not None:
            # Repaint: this turn's paint calls all start rendering now, not one episode after another.
            self.painting_ahead = render_ahead(
                self, self.paint_ahead, prompt_ids, completion_ids, self._episode_seeds(prompt_ids)
            )
        return completion_ids, logprobs

    def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> Any:
        started = time.perf_counter()
        try:
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            if self.slices is not None:
                self._record_gathered_step()
            return rewards
        finally:
            self._record_time("score", started)
            if self._scored_ahead is not None:
                ahead, ended = self._scored_ahead
                self._scored_ahead = None
                tail = ahead.tail_after(ended)
                if tail is not None:
                    self._metrics["train"]["time/ahead_tail_s"].append(tail)

    def _record_gathered_step(self) -> None:
        assert self.slices is not None and self.store is not None
        # What each reward logged of its own slice is dropped: TRL averages a metric over the processes that logged
        # it, so only the main process logs, from the whole batch, and the average is its value.
        self._pending_metrics.clear()
        prompts, completions, parts = self.slices.gather()
        if self.accelerator.is_main_process:
            log_means(self._log_metric, parts)
            # The store logs the step's rollout summary (median, best, ...) through `log_metric`.
            self.store.record_batch(
                prompts, completions, parts, {"trainer_state": self.state, "log_metric": self._log_metric}
            )

    # Seconds the last checkpoint save took, logged with the next step (a save follows its step's log line).
    _checkpoint_s: float | None = None

    def _save_checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return super()._save_checkpoint(*args, **kwargs)
        finally:
            self._checkpoint_s = time.perf_counter() - started

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        # A step's log (not the end-of-training summary) also carries the process's peak memory so far and the save
        # before it: the parts a projection of the run reads (`watercolour.rehearsal.projection`).
        if "loss" in logs:
            logs["memory/peak_gib"] = peak_memory_gib()
            if self.importance_from_loss is not None:
                logs.update(self.importance_from_loss.step_metrics(self.accelerator.gather))
            if self._checkpoint_s is not None:
                logs["time/checkpoint_s"], self._checkpoint_s = self._checkpoint_s, None
        super().log(logs, *args, **kwargs)


# TRL's per-completion-token fields (GRPOTrainer._generate_and_score_completions), cut with the completions.
PER_TOKEN = (
    "completion_ids",
    "completion_mask",
    "tool_mask",
    "old_per_token_logps",
    "sampling_per_token_logps",
    "ref_per_token_logps",
    "importance_sampling_ratio",
    "advantages",
)
PROMPT = ("prompt_ids", "prompt_mask")
# Fields whose layout ties prompt and completion columns to images: a micro-batch that has one is left whole.
MULTIMODAL = (
    "pixel_values",
    "image_grid_thw",
    "pixel_attention_mask",
    "token_type_ids",
    "mm_token_type_ids",
    "image_position_ids",
)


def trimmed(inputs: dict[str, Any]) -> dict[str, Any]:
    """The micro-batch without the prompt columns no row holds (left) and the completion columns after its longest
    row (right); the same dict when there is nothing to cut or the micro-batch carries images.

    TRL pads a group's completions to the group's longest and its prompts to the longest prompt, then slices the
    update's micro-batches out of that: at the recipe's 1 × 8, a group whose longest row has 6,770 tokens ran the
    update over 8 × 6,770 completion positions for its 22,190 tokens. The padding changes nothing the loss sees
    (completions are padded after every real token of a causal model; prompts before theirs, masked, and rotary
    positions enter attention only as differences), but every layer computes it. Cut, the loss and its gradients
    are the padded batch's (`tests/training/test_micro_batch.py`)."""
    if any(key in inputs for key in MULTIMODAL) or "completion_mask" not in inputs:
        return inputs
    completion_mask, prompt_mask = inputs["completion_mask"], inputs["prompt_mask"]
    width = completion_mask.size(1)
    held = completion_mask.any(0).nonzero()
    keep = int(held[-1]) + 1 if len(held) else 1  # a fully masked micro-batch keeps one column
    first = prompt_mask.any(0).nonzero()
    drop = int(first[0]) if len(first) else 0
    if keep == width and drop == 0:
        return inputs
    cut = dict(inputs)
    for key in PER_TOKEN:
        value = cut.get(key)
        if isinstance(value, torch.Tensor) and value.dim() >= 2 and value.size(1) == width:
            cut[key] = value[:, :keep]
    for key in PROMPT:
        cut[key] = cut[key][:, drop:]
    return cut


def peak_memory_gib() -> float:
    """The most memory this process has held: the GPU's allocations on a GPU, else its resident set."""
    if torch.cuda.is_available():
        return round(torch.cuda.max_memory_allocated() / 2**30, 2)
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)  # Linux counts kB


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def generation_inputs(model: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """The processor outputs `generate` accepts: those the model's forward or its input preparation names."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    names = set(inspect.signature(base.forward).parameters) | set(
        inspect.signature(base.prepare_inputs_for_generation).parameters
    )
    return {key: value for key, value in fields.items() if key in names}


def grpo_args(config: RunConfig, run_dir: Path, plan: GenerationPlan | None = None) -> GRPOConfig:
    """The recipe's GRPO settings from the configuration, checkpointing and trackio under the run directory; the
    rollouts generated as `plan` says (None: the configuration's `training.generation`)."""
    training = config.training
    bf16, checkpointing = device_settings(training)
    return GRPOConfig(
        output_dir=str(run_dir / CHECKPOINTS_DIR),
        max_steps=training.steps,
        learning_rate=training.learning_rate,
        lr_scheduler_type=training.lr_scheduler,
        warmup_steps=training.warmup_steps,
        per_device_train_batch_size=training.per_device_batch_size,
        gradient_accumulation_steps=training.gradient_accumulation_steps,
        num_generations=training.num_generations,
        max_completion_length=training.max_completion_length,
        temperature=training.temperature,
        top_p=training.top_p,
        top_k=training.top_k,
        scale_rewards=training.scale_rewards,
        chat_template_kwargs={"enable_thinking": False},
        bf16=bf16,
        use_cpu=not torch.cuda.is_available(),
        gradient_checkpointing=checkpointing,
        # Only for a policy TRL loads by name: a start adapter or a shape is built here, and TRL warns on every run
        # that it ignores them.
        model_init_kwargs=(
            {"dtype": "bfloat16" if bf16 else "float32"}
            if training.start_adapter is None and shape_name(training.model) is None
            else None
        ),
        seed=training.seed,
        logging_steps=1,
        save_strategy="steps",
        save_steps=training.save_steps,
        save_total_limit=KEEP_CHECKPOINTS,
        # transformers' `project` defaults to "huggingface" and ignores TRACKIO_PROJECT; no Space id = local only,
        # and no static Space either, so nothing is synced to the hub at the end.
        report_to=["trackio"],
        project=training.project,
        run_name=run_dir.name,
        trackio_space_id=None,
        trackio_static_space_id=False,
        # A repaint episode's tool loop runs once per painting; the reply after the last observation is not acted on.
        max_tool_calling_iterations=config.repaint.turns if config.repaint is not None else None,
        # TRL's importance correction, read only where pipelined rollouts hand it their sampling log-probabilities
        # (`watercolour.pipeline.rollouts`): a ratio per token, truncated at TRL's cap (its default, 3).
        vllm_importance_sampling_mode=IMPORTANCE_MODE,
        **grpo_kwargs(plan or resolve(training)),
    )


def prompt_dataset(training: TrainingSettings, world_size: int = 1) -> Dataset:
    """One chat prompt per group and step, all the same subject: the variation comes from sampling.

    A step's batch is `per_device_batch_size` completions per process and accumulation step, so `world_size`
    processes ask for that many times the groups.
    """
    completions_per_step = training.per_device_batch_size * training.gradient_accumulation_steps * world_size
    groups_per_step = max(1, completions_per_step // training.num_generations)
    rows = training.steps * groups_per_step
    return Dataset.from_dict(
        {"prompt": [messages(training.subject, training.prompt)] * rows, "subject": [training.subject] * rows}
    )


def processing_class(model: str, vision: bool) -> Any:
    """The policy's tokenizer, or for a vision policy its processor (images in tool results go through it), with
    the sides TRL gives the processing class it loads itself."""
    if vision:
        from transformers import AutoProcessor

        return AutoProcessor.from_pretrained(model, padding_side="left", truncation_side="left")
    return AutoTokenizer.from_pretrained(model, padding_side="left", truncation_side="left")


def policy_to_train(training: TrainingSettings, echo: Echo) -> tuple[Any, Any, LoraConfig | None]:
    """The policy GRPO trains, its tokenizer where building the policy gave one (else None: `build_trainer` loads
    it), and the LoRA TRL puts on it (None for a start adapter, whose own LoRA carries on)."""
    shape = shape_name(training.model)
    bf16, _ = device_settings(training)
    if shape is not None:
        # A rehearsal: the published shape with random weights, built on this process's device.
        model, tokenizer = shape_policy(shape, bf16)
        tell(echo, f"policy: {training.model}, random weights built on {model.device} (a rehearsal)")
        return model, tokenizer, lora_config(training)
    if training.start_adapter is not None:
        # A warm restart: the adapter's weights carry on, the optimizer and the schedule start afresh.
        model, tokenizer = load_policy(
            training.start_adapter, trainable=True, dtype=torch.bfloat16 if bf16 else torch.float32
        )
        return model, tokenizer, None
    return resolve_model(training.model), None, lora_config(training)


def build_trainer(
    config: RunConfig,
    run_dir: Path,
    echo: Echo = True,
    fan_out: FanOut | None = None,
    step_hook: StepHookFactory | None = None,
    plan: GenerationPlan | None = None,
) -> TimedGRPOTrainer:
    """The GRPO trainer for this run: policy, LoRA (fresh, or the start adapter), reward, store and curves.

    The reward is the one adapter over the scorer `watercolour.training.scoring_route` chooses; a Prefect run passes
    its `fan_out`. `step_hook(config, run_dir, then)` (the Prefect run's step artifacts) is handed each scored step
    before `then`, the rollout store. A repaint run's environments score instead, and the hook follows each step's
    recorded episodes. Under `accelerate launch` each process builds its own reward, with its share of the browsers,
    and the main process records the gathered step (`watercolour.training.distributed`). Rollouts are generated as
    `plan` says: None is the configuration's `training.generation`; a test sets levers one by one.
    """
    training = config.training
    plan = plan or resolve(training)
    if not torch.cuda.is_available():
        set_cpu_threads()
    args = grpo_args(config, run_dir, plan)  # sets up the process group under `accelerate launch`
    store = RolloutStore(run_dir, training.num_generations, preset=config.name, pool_revision=config.pool_revision)
    slices = ScoredSlices() if args.world_size > 1 else None
    refuse_repaint_in_processes(config, args.world_size)
    shape = shape_name(training.model)
    model, tokenizer, peft_config = policy_to_train(training, echo)
    callbacks: list[Any] = [CurvesCallback(CurvesFile(run_dir), echo=echo)]
    factory: Any = None  # EpisodeFactory, or openenv_painting's RemoteEpisodeFactory when `openenv` is set
    if config.repaint is not None:
        # Multi-turn episodes: the environment scores each painting; the reward function reads the episodes.
        factory = episode_factory(config, run_dir)
        tokenizer = use_tool_template(tokenizer or processing_class(model, vision=config.repaint.vision))
        hook = step_hook(config, run_dir, None) if step_hook is not None else None
        reward: Any = RepaintReward(factory, store, hook)
        callbacks.append(StepClock(factory))
    else:
        # A text prompt needs the tokenizer alone. Left to TRL, a multimodal policy gets its checkpoint's processor,
        # whose video half Qwen3.5's cannot build without torchvision, for images and videos no prompt here has.
        tokenizer = tokenizer or processing_class(model, vision=False)
        scored: OnScored = slices or store.record_batch
        if step_hook is not None:
            scored = step_hook(config, run_dir, scored)
        reward = reward_for(per_process_config(config, args.world_size), run_dir, scored, fan_out)
        tell(echo, describe(config, reward.scorer))
    # TRL's annotation predates async reward functions; it gathers them all the same.
    reward_funcs: list[Any] = [reward]
    trainer = TimedGRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=prompt_dataset(training, args.world_size),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
        environment_factory=factory,
    )
    trainer.slices, trainer.store = slices, store
    if config.repaint is not None:
        assert factory is not None
        trainer.turn_tokens = config.repaint.turn_tokens
        trainer.paint_ahead = factory.paint_ahead
    prepare_rollouts(trainer, plan)
    if training.pipeline.max_staleness:
        trainer.pipeline = pipelined(trainer, training, plan)
    if shape is not None:
        # Random weights never end a completion: rows end at lengths drawn from the recipe's (`rehearsal.lengths`).
        force_lengths(trainer, training.max_completion_length)
    route = route_gated_delta_rule(trainer.model)
    if route in ROUTE_LINES:
        tell(echo, ROUTE_LINES[route])
    # Repaint episodes are scored by their environments, turn by turn, not from the finished text.
    trainer.early_scoring = plan.early_scoring and config.repaint is None
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(QuietProgress())
    logging.getLogger(TRL_GRPO_LOGGER).addFilter(DEAD_LETTER_ROWS)
    return trainer


def close_reward(trainer: GRPOTrainer) -> None:
    """Close the reward's browsers and clients on the trainer's event loop, where they were opened."""
    import asyncio

    for reward in trainer.reward_funcs:
        if isinstance(reward, CompositeReward):
            asyncio.run_coroutine_threadsafe(reward.aclose(), trainer.async_loop).result()
        elif isinstance(reward, RepaintReward):
            close_episodes(reward.factory, trainer.async_loop)
