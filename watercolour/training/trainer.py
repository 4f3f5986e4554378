"""TRL's GRPOTrainer, built from the run configuration and wired to the one reward adapter, the rollout store,
the curves and trackio.

This module imports torch, transformers and TRL at the top: it is only ever imported by code that is about to
train. trackio reads `TRACKIO_DIR` when it is first imported (TRL imports it), so whoever imports this module
sets that variable first (`watercolour.run_records.run_dir.use_run_environment`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from datasets import Dataset
from peft import LoraConfig
from tqdm.auto import tqdm
from transformers import AutoTokenizer, ProgressCallback, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from ground.prompt import messages
from ground.records import rollout_step
from ground.run_config import RunConfig, TrainingSettings
from rewards.scoring.composite import CompositeReward, OnScored
from rewards.scoring.dead_letters import DeadLetterLog
from rewards.scoring.scoring_engine import log_means
from watercolour.policy.adapter import export_adapter, load_policy
from watercolour.policy.early_scoring import scoring_during_generation
from watercolour.policy.generation import (
    UnguardedDecode,
    grpo_kwargs,
    input_grad_hooks_paused,
    prepare_rollouts,
    resolve,
    rollout_key,
)
from watercolour.policy.linear_attention import FIX, route_gated_delta_rule
from watercolour.policy.loading import resolve_model, set_cpu_threads
from watercolour.policy.lora import device_settings, lora_config
from watercolour.policy.rollout_weights import MergedForRollouts
from watercolour.policy.tool_chat import use_tool_template
from watercolour.rehearsal.lengths import force_lengths
from watercolour.rehearsal.shapes import shape_name, shape_policy
from watercolour.run_records.curves import CurvesFile, curve_row, summary_line
from watercolour.run_records.gallery import write_gallery
from watercolour.run_records.rollout_store import RolloutStore, gallery_items
from watercolour.run_records.run_dir import CHECKPOINTS_DIR, checkpoint_step, latest_checkpoint
from watercolour.training.distributed import ScoredSlices, per_process_config, process_state
from watercolour.training.launch import FailAtStep, launched, record_rank_failure, train_in_processes
from watercolour.training.paint_ahead import episode_seeds, render_ahead
from watercolour.training.repaint_reward import RepaintReward, StepClock, close_episodes, episode_factory
from watercolour.training.scoring_route import FanOut, describe, reward_for


ADAPTER_DIR = "adapter"
GALLERY_DIR = "gallery"
# Each checkpoint holds the adapter plus Adam's two moments; a few is enough to step back from a bad save.
KEEP_CHECKPOINTS = 3
# A tool-loop turn's token cap is rounded up to this, so a static, compiled cache sees few distinct lengths.
GENERATION_CAP_MULTIPLE = 64

# (config, run_dir, then) -> what each scored step is handed to, which hands it on to `then` (the rollout store;
# None for a repaint run, whose episodes are recorded by the reward itself): the Prefect run's step artifacts.
StepHookFactory = Callable[[RunConfig, Path, OnScored | None], OnScored]


class RunDirInUse(RuntimeError):
    """A fresh run was asked for in a directory that already holds a run's checkpoints."""


class RepaintInOneProcess(RuntimeError):
    """Repaint episodes were asked of a multi-process run; they train in one process (docs/repaint.md)."""


def refuse_repaint_in_processes(config: RunConfig, world_size: int) -> None:
    """Repaint runs train in one process: its episodes record their own turns, which are not gathered."""
    if config.repaint is not None and world_size > 1:
        raise RepaintInOneProcess(
            "repaint episodes train in one process (their turns are recorded by the environments, not gathered "
            f"across processes); run it without `accelerate launch` (world size {world_size})"
        )


class TimedGRPOTrainer(GRPOTrainer):
    """GRPOTrainer that logs where a step's time goes: generating and scoring (the update is the rest).

    TRL times these phases too, but sends the timings straight to the trackers, past the callbacks that write
    the curves; wrapping its two phase methods (TRL is pinned at 1.16) puts them in the step's logs instead.

    In several processes (`slices` set), scoring ends with the step's gather: every process's scored slice goes
    to the main process, which records the whole step in the store and logs its reward metrics once
    (`watercolour.training.distributed`).
    """

    slices: ScoredSlices | None = None
    store: RolloutStore | None = None

    def _record_time(self, name: str, started: float) -> None:
        # Runs have no eval set, so every generation belongs to a training step.
        self._metrics["train"][f"time/{name}_s"].append(time.perf_counter() - started)

    # Score each completion as soon as it ends (`watercolour.policy.early_scoring`); set from the generation plan.
    early_scoring = False
    # The dataset rows of the batch being generated (TRL's `inputs`): their columns go to the reward with each row.
    _batch_rows: list[dict[str, Any]] | None = None

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> Any:
        self._batch_rows = inputs
        try:
            return super()._generate_and_score_completions(inputs)
        finally:
            self._batch_rows = None

    # Decode rollouts with the LoRA merged into the weights (`watercolour.policy.rollout_weights`); set from the plan.
    merge_for_rollouts: MergedForRollouts | None = None

    def rollout_weights(self) -> AbstractContextManager[None]:
        """The policy's weights as rollouts decode with them: merged for the rollout, restored bit for bit after."""
        return self.merge_for_rollouts(self.model) if self.merge_for_rollouts is not None else nullcontext()

    def _generate(self, prompts: list) -> Any:
        started = time.perf_counter()
        # With tools the first reply is not the completion (the tool loop carries on from it): render it only.
        rows = None if self.tools else self._batch_rows
        try:
            with (
                input_grad_hooks_paused(self.model, paused=not self.generation_config.disable_compile),
                self.rollout_weights(),
                scoring_during_generation(self, prompts, rows) if self.early_scoring else nullcontext(),
            ):
                return super()._generate(prompts)
        finally:
            self._record_time("generate", started)

    # Compiled decode steps of shapes already compiled run without their guards; set from the generation plan.
    unguarded_decode: UnguardedDecode | None = None
    # Key positions per block of the decode step's written-only attention: the static cache is sized in whole blocks.
    cache_block = 0

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

    def _tool_call_loop(self, *args: Any, **kw: Any) -> Any:
        self._in_tool_loop = True
        try:
            return super()._tool_call_loop(*args, **kw)
        finally:
            self._in_tool_loop = False

    def _generate_single_turn(
        self, prompt_ids: Any, images: Any, multimodal_fields: Any, *args: Any, **kw: Any
    ) -> Any:
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
            # Attending only over written blocks, the cache is sized in whole blocks (docs/gpu.md).
            self.generation_config.max_cache_len = round_up(
                max(len(ids) for ids in prompt_ids) + self.generation_config.max_new_tokens, self.cache_block
            )
        config = self.generation_config
        floor = getattr(self.model, "_previous_max_cache_length", -1)
        multiple = self.pad_to_multiple_of  # TRL types it loosely; the configuration gives an int or None
        key = rollout_key(
            prompt_ids, config.max_new_tokens, int(multiple) if multiple else None, config.max_cache_len, floor
        )
        # Pictures (a vision policy's tool results) change what the step is traced with beyond the key: guarded.
        unguarded = None if inputs or any(images or []) else self.unguarded_decode
        try:
            with unguarded(key) if unguarded is not None else nullcontext():
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
            if self._checkpoint_s is not None:
                logs["time/checkpoint_s"], self._checkpoint_s = self._checkpoint_s, None
        super().log(logs, *args, **kwargs)


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


# Where the per-step summary line goes: stderr under the progress bar (True), nowhere (False), or a callable.
Echo = bool | Callable[[str], None]


def tell(echo: Echo, line: str) -> None:
    if callable(echo):
        echo(line)
    elif echo:
        tqdm.write(line, file=sys.stderr)


class CurvesCallback(TrainerCallback):
    """Appends one `curves.csv` row per step from the step's logged metrics and prints its summary line; while a step
    runs longer than a minute (a recipe step on a GPU takes two to four), it says so once a minute."""

    def __init__(self, curves: CurvesFile, echo: Echo = True, pulse_s: float = 60.0) -> None:
        self.curves = curves
        self.echo = echo
        self.pulse_s = pulse_s
        self._step_started = time.perf_counter()
        self._step_done = threading.Event()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step_started = time.perf_counter()
        self._step_done.set()  # the last step's pulse stops
        self._step_done = threading.Event()
        if state.is_world_process_zero and self.echo:
            step, total, done = state.global_step + 1, state.max_steps, self._step_done
            threading.Thread(target=self._pulse, args=(step, total, done), daemon=True).start()

    def _pulse(self, step: int, total: int, done: threading.Event) -> None:
        while not done.wait(self.pulse_s):
            minutes = (time.perf_counter() - self._step_started) / 60
            tell(self.echo, f"step {step}/{total} in progress: {minutes:.0f} min in")

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        # The end-of-training summary (train_runtime, ...) is logged too; only step logs carry a reward. Every
        # process logs the step (its metrics already gathered); one curves file is written, by the main process.
        if not logs or "reward" not in logs or not state.is_world_process_zero:
            return
        self._step_done.set()
        row = curve_row(state.global_step, {**logs, "step_time": time.perf_counter() - self._step_started})
        self.curves.append(row)
        # To the train flow's run logger (one line per step in the flow's logs), or under the progress bar.
        tell(self.echo, summary_line(row, state.max_steps))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step_done.set()


class QuietProgress(ProgressCallback):
    """The step progress bar without the raw metrics dict after every step (the summary line replaces it)."""

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        return None


def grpo_args(config: RunConfig, run_dir: Path) -> GRPOConfig:
    """The recipe's GRPO settings from the configuration, checkpointing and trackio under the run directory."""
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
        **grpo_kwargs(resolve(training)),
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


def build_trainer(
    config: RunConfig,
    run_dir: Path,
    echo: Echo = True,
    fan_out: FanOut | None = None,
    step_hook: StepHookFactory | None = None,
) -> TimedGRPOTrainer:
    """The GRPO trainer for this run: policy, LoRA (fresh, or the start adapter), reward, store and curves.

    The reward is the one adapter over the scorer `watercolour.training.scoring_route` chooses; a Prefect run passes
    its `fan_out`. `step_hook(config, run_dir, then)` (the Prefect run's step artifacts) is handed each scored step
    before `then`, the rollout store. A repaint run's environments score instead, and the hook follows each step's
    recorded episodes. Under `accelerate launch` each process builds its own reward, with its share of the browsers,
    and the main process records the gathered step (`watercolour.training.distributed`).
    """
    training = config.training
    if not torch.cuda.is_available():
        set_cpu_threads()
    args = grpo_args(config, run_dir)  # sets up the process group under `accelerate launch`
    store = RolloutStore(run_dir, training.num_generations, preset=config.name, pool_revision=config.pool_revision)
    slices = ScoredSlices() if args.world_size > 1 else None
    refuse_repaint_in_processes(config, args.world_size)
    shape = shape_name(training.model)
    bf16, _ = device_settings(training)
    model: Any
    tokenizer: Any = None
    peft_config: LoraConfig | None = lora_config(training)
    if shape is not None:
        # A rehearsal: the published shape with random weights, built on this process's device.
        model, tokenizer = shape_policy(shape, bf16)
        tell(echo, f"policy: {training.model}, random weights built on {model.device} (a rehearsal)")
    elif training.start_adapter is not None:
        # A warm restart: the adapter's weights carry on, the optimizer and the schedule start afresh.
        model, tokenizer = load_policy(
            training.start_adapter, trainable=True, dtype=torch.bfloat16 if bf16 else torch.float32
        )
        peft_config = None
    else:
        model = resolve_model(training.model)
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
    plan = resolve(training)
    prepare_rollouts(trainer, plan)
    if shape is not None:
        # Random weights never end a completion: rows end at lengths drawn from the recipe's (`rehearsal.lengths`).
        force_lengths(trainer, training.max_completion_length)
    if route_gated_delta_rule(trainer.model) == "fla-rollouts":
        tell(
            echo, f"Gated DeltaNet: fla's backward is wrong on this GPU, so updates use transformers' reference: {FIX}"
        )
    # Repaint episodes are scored by their environments, turn by turn, not from the finished text.
    trainer.early_scoring = plan.early_scoring and config.repaint is None
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(QuietProgress())
    return trainer


def close_reward(trainer: GRPOTrainer) -> None:
    """Close the reward's browsers and clients on the trainer's event loop, where they were opened."""
    import asyncio

    for reward in trainer.reward_funcs:
        if isinstance(reward, CompositeReward):
            asyncio.run_coroutine_threadsafe(reward.aclose(), trainer.async_loop).result()
        elif isinstance(reward, RepaintReward):
            close_episodes(reward.factory, trainer.async_loop)


def resume_point(run_dir: Path, resume: bool) -> Path | None:
    """The checkpoint to resume from (None: start at step 0); a checkpoint without `resume` is refused."""
    checkpoint = latest_checkpoint(run_dir)
    if checkpoint is not None and not resume:
        raise RunDirInUse(
            f"{run_dir} already holds a run (latest checkpoint {checkpoint.name}): pass --resume to continue it, "
            "or choose another --run-dir"
        )
    return checkpoint


def forget_steps_after(run_dir: Path, checkpoint: Path | None) -> None:
    """Drop everything recorded beyond the checkpoint (all of it without one).

    The rollouts, curve rows and dead letters of the step that was in flight (and of any step after the last
    checkpoint) are removed, because the resumed run records those steps again.
    """
    step = checkpoint_step(checkpoint) if checkpoint is not None else 0
    RolloutStore(run_dir, num_generations=1).truncate(after_step=step)
    CurvesFile(run_dir).truncate(after_step=step)
    DeadLetterLog(run_dir).truncate(after_step=step)


class PoolRevisionChanged(RuntimeError):
    """The pool folder no longer holds the revision the run trained against."""


def pin_pool_revision(config: RunConfig, started: Path | None) -> RunConfig:
    """The configuration with the pool revision it trains against; a resumed run keeps the one it started with
    (its saved config at `started`), and a pool folder that changed since is refused rather than trained on."""
    from ground.reference_pool import pool_revision

    found = pool_revision(config.pool_dir)
    expected = RunConfig.load(started).pool_revision if started is not None and started.is_file() else None
    expected = expected or config.pool_revision
    if expected is not None and expected != found:
        raise PoolRevisionChanged(
            f"the pool at {config.pool_dir or 'the bundled pool'} is revision {found}, but this run trains against "
            f"revision {expected}: point pool_dir at that revision's folder (pool/build keeps each under "
            "revisions/<revision>)"
        )
    return config.model_copy(update={"pool_revision": found})


def with_warm_start(config: RunConfig, run_dir: Path, processes: Any, echo: Echo) -> RunConfig:
    """The configuration starting from the warm start it asks for (`warm_start_cache.warm_started`): the main process
    makes it or finds it, the others wait and take the same folder."""
    from watercolour.training.warm_start_cache import warm_started

    if processes.is_main_process:
        config = warm_started(config, run_dir, echo=lambda line: tell(echo, line))
    processes.wait_for_everyone()
    return config if processes.is_main_process else warm_started(config, run_dir)


def train(
    config: RunConfig,
    resume: bool = False,
    echo: Echo = True,
    fan_out: FanOut | None = None,
    step_hook: StepHookFactory | None = None,
    fail_at_step: int | None = None,
) -> dict[str, Path]:
    """One run end to end: resume point, training, the adapter and the run's gallery. Returns what it wrote.

    With `training.processes` > 1 (and not already a rank), the run launches its ranks and waits for them
    (`watercolour.training.launch`): `step_hook` then sees each step once the main rank has stored it, and a fan-out
    is not used (each rank scores in process). Every rank calls this; the main process alone writes the run's files
    (the others return an empty dict: they wrote none of them) and every process trains its share. `fail_at_step`
    fails the run on purpose in the step after it (rehearsing a resume).
    """
    assert config.run_dir is not None, "RunConfig resolves run_dir when it is built"
    run_dir = Path(config.run_dir)
    if config.training.processes > 1 and not launched():
        resume_point(run_dir, resume)  # refused here, before any rank starts, as in one process
        on_step = stored_step_hook(config, run_dir, step_hook) if step_hook is not None else None
        return train_in_processes(config, resume, lambda line: tell(echo, line), on_step, fail_at_step)
    if fail_at_step is not None:
        step_hook = failing_at(fail_at_step, step_hook)
    try:
        return train_here(config, run_dir, resume, echo, fan_out, step_hook)
    except Exception as error:
        if launched():
            record_rank_failure(run_dir, error)
        raise


def failing_at(step: int, step_hook: StepHookFactory | None) -> StepHookFactory:
    """`step_hook` with `FailAtStep` after it."""

    def hook(config: RunConfig, run_dir: Path, then: OnScored | None) -> OnScored:
        return FailAtStep(step, step_hook(config, run_dir, then) if step_hook is not None else then)

    return hook


def stored_step_hook(config: RunConfig, run_dir: Path, step_hook: StepHookFactory) -> Callable[[int], None]:
    """A launched run's steps, handed to `step_hook` from the store once the main rank has written each."""
    hook = step_hook(config, run_dir, None)
    store = RolloutStore(run_dir, config.training.num_generations)

    def on_step(step: int) -> None:
        prompts, completions, parts = store.step(step)
        hook(prompts, completions, parts, {"trainer_state": SimpleNamespace(global_step=step - 1)})

    return on_step


def train_here(
    config: RunConfig,
    run_dir: Path,
    resume: bool,
    echo: Echo,
    fan_out: FanOut | None,
    step_hook: StepHookFactory | None,
) -> dict[str, Path]:
    """`train` in this process (one of a launched run's ranks, or the only one)."""
    processes = process_state()
    checkpoint = resume_point(run_dir, resume)  # every process decides the same, so all refuse or none does
    # Every process pins the same revision (a read-only hash); a resume against a changed pool is refused by all.
    config = pin_pool_revision(config, run_dir / "config.yaml" if checkpoint is not None else None)
    refuse_repaint_in_processes(config, processes.num_processes)
    config = with_warm_start(config, run_dir, processes, echo)
    if processes.is_main_process:
        forget_steps_after(run_dir, checkpoint)
        config.save(run_dir / "config.yaml")
    processes.wait_for_everyone()  # nobody records a step before the main process forgot the ones to redo
    trainer = build_trainer(config, run_dir, echo=echo, fan_out=fan_out, step_hook=step_hook)
    try:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    finally:
        close_reward(trainer)
    # A collective under FSDP (the shards are gathered), the model's own state dict otherwise: every process calls it.
    state_dict = trainer.accelerator.get_state_dict(trainer.model)
    if not processes.is_main_process:
        return {}
    adapter = export_adapter(
        trainer,
        run_dir / ADAPTER_DIR,
        base_model=config.training.model,
        config_name=config.name,
        state_dict=state_dict,
    )
    store = RolloutStore(
        run_dir, config.training.num_generations, preset=config.name, pool_revision=config.pool_revision
    )
    gallery = write_gallery(
        gallery_items(store.rows(), run_dir / GALLERY_DIR, run_dir),
        run_dir / GALLERY_DIR,
        f"{config.name}: {run_dir.name}",
    )
    return {
        "config": run_dir / "config.yaml",
        "curves": CurvesFile(run_dir).path,
        "rollouts": store.root,
        "checkpoints": run_dir / CHECKPOINTS_DIR,
        "adapter": adapter,
        "gallery": gallery,
    }
