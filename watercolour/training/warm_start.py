"""The warm start: supervised fine-tuning of the policy's LoRA on good sketches before GRPO.

GRPO learns only from groups whose rollouts differ in reward. A small untuned policy almost never writes a sketch
that passes the gate, so every reward in every group is 0 and the run teaches nothing. A short SFT on the
reference pool's sketches plus procedural ones (`watercolour.policy.procedural`), framed as chat answers to the real
painting prompt, moves the policy to where some rollouts pass; `training.start_adapter` then makes GRPO carry
on from that adapter. The adapter is written with `watercolour.policy.adapter.export_adapter` and checked by loading
it back through `load_policy`, which verifies every tensor.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ground.prompt import SUBJECTS, PromptStyle, messages
from ground.run_config import RunConfig
from watercolour.policy.procedural import Style


WARMSTART_DIR = "warmstart"
ADAPTER_DIR = "adapter"
REPORT_FILE = "warmstart.json"
# SFT wants a larger step than GRPO's: a few dozen examples must move a fresh LoRA from token soup to sketches.
# Measured on SmolLM2-135M (24 steps each): 3e-4 ended at loss 0.87, 1e-3 at 0.50, with no instability.
LEARNING_RATE = 1e-3
# Procedural sketches tried per example before the budget is declared too small for the style.
MAX_TRIES_PER_EXAMPLE = 20
# A third of the examples come from the pool (hand-written, but few fit the budget); the rest are procedural.
POOL_SHARE = 1 / 3


class ExamplesDoNotFit(ValueError):
    """The preset's completion budget is too small for the examples asked for: a configuration error."""


@dataclass
class WarmStartReport:
    """What the warm start did, written to `run_dir/warmstart/warmstart.json`."""

    adapter_dir: str
    base_model: str
    examples: int
    pool_examples: int
    epochs: float
    optimizer_steps: int
    tokens: int
    seconds: float
    losses: list[float] = field(default_factory=list)

    @property
    def first_loss(self) -> float:
        return self.losses[0]

    @property
    def last_loss(self) -> float:
        return self.losses[-1]


def build_examples(
    count: int,
    subject: str,
    tokenizer: Any,
    max_completion_tokens: int,
    seed: int = 0,
    style: Style = "full",
    prompt: PromptStyle = "full",
    neighbours: bool = False,
    colour_blind: bool = False,
) -> tuple[list[dict], int]:
    """`count` prompt/completion chat rows and how many came from the pool.

    Only answers that fit `max_completion_tokens` are taught: a policy taught longer ones would be cut off by
    GRPO's completion budget and fail the gate as truncated. Half the procedural rows paint the run's subject;
    the other half a seeded subject of the prompt's list, or with `neighbours` the subject's neighbours in turn
    (`rewards.subject_match.neighbours`: the same flower in other colours). The compact style
    (`procedural.compact_sketch`) teaches only short procedural sketches, no pool rows. With `colour_blind` the
    procedural rows' prompt and reply name the flower without its colours ("a hibiscus"), so the policy learns
    the flower and the palettes but not which palette a colour word asks for: that is left for GRPO to learn. The
    subject's palette then takes an equal share with each neighbour's instead of half.
    """
    from ground.reference_pool import load_pool
    from rewards.subject_match import neighbours as neighbours_of
    from watercolour.policy.procedural import completion, flower_only, plan_flower, reply

    def fits(text: str) -> bool:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) < max_completion_tokens

    pool = [(ref.subject, reply(ref.subject, ref.sketch)) for ref in load_pool()]
    pool = [(topic, text) for topic, text in pool if fits(text)]
    rng = random.Random(seed)
    rng.shuffle(pool)
    chosen = [] if style != "full" else pool[: round(count * POOL_SHARE)]
    procedural_seed = seed * 100_000
    tried = 0
    others = neighbours_of(subject, SUBJECTS) if neighbours else []
    while len(chosen) < count:
        if colour_blind and others:  # blind to which palette is asked for: the subject's is one among equals
            topic = [subject, *others][len(chosen) % (1 + len(others))]
        elif len(chosen) % 2 == 0:
            topic = subject
        elif others:
            topic = others[(len(chosen) // 2) % len(others)]
        else:
            topic = plan_flower(procedural_seed).subject
        title = flower_only(topic) if colour_blind else None
        text = completion(procedural_seed, topic, style, title)
        procedural_seed += 1
        tried += 1
        if fits(text):
            chosen.append((title or topic, text))
        elif tried >= MAX_TRIES_PER_EXAMPLE * count:
            raise ExamplesDoNotFit(
                f"only {len(chosen)} of {count} {style} warm-start examples fit max_completion_length="
                f"{max_completion_tokens} tokens after {tried} procedural sketches: raise the budget or use the "
                "compact style"
            )
    rng.shuffle(chosen)
    rows = [
        {"prompt": messages(topic, prompt), "completion": [{"role": "assistant", "content": text}]}
        for topic, text in chosen
    ]
    return rows, sum(1 for item in chosen if item in pool)


def repaint_rows(config: RunConfig, run_dir: Path, count: int) -> list[dict]:
    """`count` whole taught episodes (`watercolour.training.repaint_examples`), played through the run's scoring."""
    import asyncio

    from rewards.scoring.scoring_engine import ScoringEngine
    from watercolour.training.repaint_examples import episode_rows

    settings, training = config.repaint, config.training
    assert settings is not None

    async def play() -> list[dict]:
        engine = ScoringEngine(config.scoring, run_dir / WARMSTART_DIR)
        try:
            return await episode_rows(engine, settings, count, training.subject, training.seed, training.prompt)
        finally:
            await engine.aclose()

    return asyncio.run(play())


def warm_start(
    config: RunConfig,
    run_dir: Path | None = None,
    examples: int = 48,
    epochs: float = 1.0,
    learning_rate: float = LEARNING_RATE,
    style: Style = "full",
    neighbours: bool = False,
    colour_blind: bool = False,
    echo: Callable[[str], None] | None = None,
) -> WarmStartReport:
    """SFT the configured policy's LoRA on pool and procedural sketches (on whole taught episodes for a repaint
    run); write and verify the adapter.

    With `neighbours`, the rows that do not paint the run's subject paint its neighbours; with `colour_blind`,
    their prompts name only the flower (see `build_examples`). `echo` gets a line at least once a minute."""
    import torch
    from transformers import AutoTokenizer

    from watercolour.policy.adapter import export_adapter, load_policy
    from watercolour.policy.loading import resolve_model, set_cpu_threads

    run_dir = Path(run_dir or config.run_dir or Path("runs") / config.name)
    if not torch.cuda.is_available():
        set_cpu_threads()
    base_path = resolve_model(config.training.model)
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    if config.repaint is not None:  # whole episodes through the paint tool, in the template it calls tools with
        from watercolour.policy.tool_chat import use_tool_template

        tokenizer = use_tool_template(tokenizer)
        rows, from_pool = repaint_rows(config, run_dir, examples), 0
    else:
        training = config.training
        rows, from_pool = build_examples(
            examples,
            training.subject,
            tokenizer,
            training.max_completion_length,
            training.seed,
            style,
            training.prompt,
            neighbours,
            colour_blind,
        )
    out_dir = run_dir / WARMSTART_DIR
    args = sft_arguments(config, out_dir, longest_prompt(tokenizer, rows), examples, epochs, learning_rate)
    started = time.perf_counter()
    trainer = fine_tune(config, base_path, tokenizer, rows, args, echo)
    seconds = time.perf_counter() - started
    adapter_dir = export_adapter(
        trainer, out_dir / ADAPTER_DIR, base_model=config.training.model, config_name=config.name
    )
    # Load it back the one tested way: raises unless every adapter tensor landed with its trained value.
    load_policy(adapter_dir)
    history = trainer.state.log_history
    report = WarmStartReport(
        adapter_dir=str(adapter_dir),
        base_model=config.training.model,
        examples=len(rows),
        pool_examples=from_pool,
        epochs=epochs,
        optimizer_steps=trainer.state.global_step,
        tokens=int(max(entry.get("num_tokens", 0) for entry in history)),
        seconds=round(seconds, 1),
        losses=[round(entry["loss"], 4) for entry in history if "loss" in entry],
    )
    (out_dir / REPORT_FILE).write_text(json.dumps(asdict(report), indent=2) + "\n")
    return report


def longest_prompt(tokenizer: Any, rows: list[dict]) -> int:
    """The longest templated prompt of `rows`, in characters: a bound on its tokens (a token is at least one)."""
    return max(
        len(
            tokenizer.apply_chat_template(
                row["prompt"],
                tools=json.loads(row["tools"]) if "tools" in row else None,
                add_generation_prompt=True,
                tokenize=False,
            )
        )
        for row in rows
    )


def sft_arguments(
    config: RunConfig, out_dir: Path, prompt_chars: int, examples: int, epochs: float, learning_rate: float
) -> Any:
    """TRL's `SFTConfig` for the warm start: one row a step, never truncated, the loss on the policy's own turns."""
    import torch
    from trl import SFTConfig

    from watercolour.policy.lora import device_settings

    training = config.training
    bf16, checkpointing = device_settings(training)
    return SFTConfig(
        output_dir=str(out_dir / "trainer"),
        num_train_epochs=epochs,
        learning_rate=learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=max(1, round(0.1 * examples * epochs)),
        per_device_train_batch_size=1,
        gradient_accumulation_steps=1,
        # Never truncate: every row is a prompt plus a completion shorter than GRPO's budget (a paint call's JSON
        # escapes add a few tokens a line, hence the margin).
        max_length=prompt_chars + 2 * training.max_completion_length,
        completion_only_loss=True,
        # An episode's observations are the environment's words, not the policy's: only its own turns are taught.
        assistant_only_loss=config.repaint is not None,
        bf16=bf16,
        use_cpu=not torch.cuda.is_available(),
        # Recomputing activations buys memory a 135M model on CPU does not need, at a third more time.
        gradient_checkpointing=checkpointing,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=training.seed,
        disable_tqdm=True,
    )


def fine_tune(
    config: RunConfig, base_path: str, tokenizer: Any, rows: list[dict], args: Any, echo: Callable[[str], None] | None
) -> Any:
    """The trained SFT trainer: the policy's base with a fresh LoRA, taught `rows` under `args`."""
    import torch
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import SFTTrainer

    from watercolour.policy.adapter import load_base
    from watercolour.policy.lora import device_settings, lora_config

    bf16, _ = device_settings(config.training)
    trainer = SFTTrainer(
        model=load_base(base_path, dtype=torch.bfloat16 if bf16 else torch.float32),
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora_config(config.training),
    )
    # With the progress bar off, transformers prints every step's raw log dict; a line a minute says more.
    trainer.remove_callback(PrinterCallback)
    if echo is not None:
        trainer.add_callback(line_a_minute(echo))
    trainer.train()
    return trainer


def line_a_minute(echo: Callable[[str], None], every_s: float = 60.0) -> Any:
    """A trainer callback that says how training is going at most once a minute (and when it ends), so a long phase
    is never silent."""
    from transformers import TrainerCallback

    started = time.perf_counter()
    said = [started]

    class LineAMinute(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            now = time.perf_counter()
            if not logs or "loss" not in logs or (now - said[0] < every_s and state.global_step < state.max_steps):
                return
            said[0] = now
            left = (now - started) / max(1, state.global_step) * (state.max_steps - state.global_step)
            echo(
                f"warm start: step {state.global_step}/{state.max_steps}, loss {logs['loss']:.3f}, "
                f"{(now - started) / 60:.0f} min in, about {left / 60:.0f} min left"
            )

    return LineAMinute()


def starting_from(config: RunConfig, adapter: Path) -> RunConfig:
    """The configuration with GRPO starting from `adapter` (`training.start_adapter`)."""
    return config.model_copy(update={"training": config.training.model_copy(update={"start_adapter": adapter})})


def repaint_warm_start(config: RunConfig, run_dir: Path) -> RunConfig:
    """The configuration with `training.start_adapter` set to the run's repaint warm start, made once and reused."""
    assert config.repaint is not None
    adapter = run_dir / WARMSTART_DIR / ADAPTER_DIR
    if not (run_dir / WARMSTART_DIR / REPORT_FILE).is_file():
        warm_start(config, run_dir, examples=config.repaint.warm_start_examples, epochs=2.0, style="compact")
    return starting_from(config, adapter)
