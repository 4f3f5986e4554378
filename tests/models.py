"""A tiny policy for training tests that actually learns something: a random Llama taught three replies.

A random model writes token soup, every rollout fails the gate, every reward is 0, every advantage is 0 and LoRA never
moves, so a training test on it proves nothing. This one is the tiny random Llama of
`watercolour.policy.loading.tiny_random_policy` (its tokenizer trained on the prompt and the replies, so a reply is a
token or two), fine-tuned for a few seconds on the real chat prompt to answer with one of three gate fixtures: two
sketches the gate admits (with different rewards) and one that calls a bare `ellipse` (refused). Sampling at
temperature 1 mixes them, so groups have reward variance and GRPO has a gradient. Built once and cached under the
repository's `data/` (gitignored), keyed by its inputs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ground.prompt import DEFAULT_SUBJECT, messages
from watercolour.policy.loading import TINY_CONFIG, TINY_VOCAB, save_model_folder, tiny_random_policy


REPOSITORY = Path(__file__).resolve().parents[1]
DATA_DIR = REPOSITORY / "data" / "models"
GATE_FIXTURES = REPOSITORY / "watercolour" / "fixtures" / "gate"
# Two sketches the gate admits (they paint differently, so they score differently) and one it refuses, each with
# its verdict in the fixtures' expected.json.
TAUGHT = ("allowlist_flower.js", "setup_only.js", "bare_ellipse.js")
REPLIES = tuple(f"```javascript\n{(GATE_FIXTURES / name).read_text().strip()}\n```" for name in TAUGHT)
TRAIN_STEPS = 60
LEARNING_RATE = 1e-2


def tiny_sketcher(subject: str = DEFAULT_SUBJECT) -> Path:
    """The taught tiny policy's folder (built on first use in about 7 s, then reused)."""
    return _taught("tiny-sketcher", REPLIES, subject, repaint=False)


def paint_call(reply: str) -> str:
    """A taught reply as a call of the repaint environment's paint tool, as the Qwen2.5 tool template writes it."""
    sketch = reply.removeprefix("```javascript\n").removesuffix("\n```")
    return f'<tool_call>\n{{"name": "paint", "arguments": {json.dumps({"sketch": sketch})}}}\n</tool_call>'


def tiny_painter(subject: str = DEFAULT_SUBJECT) -> Path:
    """The tiny policy taught to answer the repaint prompt (tools listed) with a paint call of one of the three
    gate fixtures, so repaint episodes paint, score differently and give GRPO a gradient."""
    return _taught("tiny-painter", tuple(paint_call(reply) for reply in REPLIES), subject, repaint=True)


def _taught(name: str, replies: tuple[str, ...], subject: str, repaint: bool) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    key = hashlib.sha256(
        repr((replies, messages(subject), TRAIN_STEPS, LEARNING_RATE, TINY_CONFIG, TINY_VOCAB)).encode()
    ).hexdigest()[:12]
    out_dir = DATA_DIR / f"{name}-{key}"
    if (out_dir / "config.json").is_file():
        return out_dir
    torch.set_num_threads(1)
    torch.manual_seed(0)
    base = tiny_random_policy(out_dir.with_name(out_dir.name + ".base"), corpus=replies)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    if repaint:
        from episodes.painting_env import PaintingEnv, instructions
        from ground.run_config import RepaintSettings
        from watercolour.policy.tool_chat import use_tool_template

        use_tool_template(tokenizer)
        chat = messages(subject)
        chat[-1] = {**chat[-1], "content": chat[-1]["content"] + instructions(RepaintSettings())}
        prompt = tokenizer.apply_chat_template(
            chat, tools=[PaintingEnv.paint], add_generation_prompt=True, tokenize=False, enable_thinking=False
        )
    else:
        prompt = tokenizer.apply_chat_template(
            messages(subject), add_generation_prompt=True, tokenize=False, enable_thinking=False
        )
    _teach(model, tokenizer, prompt, replies)
    return save_model_folder(model, tokenizer, out_dir)


# --- a tiny vision-language painter -------------------------------------------------------------------------------

# TRL's Qwen2.5 tool-calling template (ChatML), extended to render a content list: an image part as the processor's
# `<start_of_image>` placeholder (Gemma 3's), a text part as its text. Real VLM policies bring their own tool
# template (Qwen3-VL's is one TRL knows); this one fits the tiny Gemma 3 below.
VISION_CONTENT = (
    "{%- macro content(value) -%}{%- if value is string -%}{{- value -}}{%- else -%}{%- for part in value -%}"
    "{%- if part.type == 'image' -%}{{- '<start_of_image>' -}}{%- elif part.type == 'text' -%}{{- part.text -}}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}{%- endmacro -%}\n"
)
# Gemma 3's image tokens, named so TRL finds its image placeholder ("<|image|>") and marks the picture's tokens.
IMAGE_TOKENS = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<|image|>"}
VISION_IMAGE_SIZE = 32  # pixels a side the processor shrinks a picture to: (32 / 16)^2 patches, pooled to 1 token
VISION_CONFIG = dict(
    model_type="siglip_vision_model",
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=2,
    image_size=VISION_IMAGE_SIZE,
    patch_size=16,
)
GEMMA_TEXT = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    query_pre_attn_scalar=16,
    sliding_window=512,
    max_position_embeddings=8192,
)


def vision_tool_template() -> str:
    from trl.chat_template_utils import qwen2_5_chat_template

    template = qwen2_5_chat_template
    for old in ("messages[0]['content']", "message.content"):
        template = template.replace(old, f"content({old})")
    return VISION_CONTENT + template


def tiny_vision_painter(subject: str = DEFAULT_SUBJECT) -> Path:
    """A tiny random Gemma 3 vision-language model (a one-layer SigLIP tower, a two-layer Gemma) with a locally
    trained tokenizer and processor, taught like `tiny_painter` to answer the repaint prompt with a paint call. Its
    processor turns each picture into one image token, so a painting in a tool result reaches the model cheaply."""
    key = hashlib.sha256(
        repr((REPLIES, messages(subject), TRAIN_STEPS, LEARNING_RATE, GEMMA_TEXT, VISION_CONFIG, "gemma3")).encode()
    ).hexdigest()[:12]
    out_dir = DATA_DIR / f"tiny-vision-painter-{key}"
    if (out_dir / "config.json").is_file():
        return out_dir
    import torch
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessorPil,
        Gemma3Processor,
        PreTrainedTokenizerFast,
    )
    from trl.chat_template_utils import qwen3_template

    from episodes.painting_env import PaintingEnv, instructions
    from ground.run_config import RepaintSettings
    from watercolour.policy.loading import tiny_tokenizer

    torch.set_num_threads(1)
    torch.manual_seed(0)
    replies = tuple(paint_call(reply) for reply in REPLIES)
    text_tokenizer = tiny_tokenizer(replies)
    text_tokenizer.add_special_tokens({"additional_special_tokens": list(IMAGE_TOKENS.values())})
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=text_tokenizer.backend_tokenizer,
        bos_token=text_tokenizer.bos_token,
        eos_token=text_tokenizer.eos_token,
        pad_token=text_tokenizer.pad_token,
        extra_special_tokens=IMAGE_TOKENS,  # named, as the Gemma 3 processor reads them (tokenizer.boi_token, ...)
    )
    tokenizer.response_template = qwen3_template  # how TRL parses the paint calls of the Qwen-style template
    image_processor = Gemma3ImageProcessorPil(size={"height": VISION_IMAGE_SIZE, "width": VISION_IMAGE_SIZE})
    processor = Gemma3Processor(image_processor, tokenizer, chat_template=vision_tool_template(), image_seq_length=1)
    config = Gemma3Config(
        text_config=dict(
            vocab_size=len(tokenizer),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            **GEMMA_TEXT,
        ),
        vision_config=VISION_CONFIG,
        mm_tokens_per_image=1,
        boi_token_index=tokenizer.convert_tokens_to_ids(IMAGE_TOKENS["boi_token"]),
        eoi_token_index=tokenizer.convert_tokens_to_ids(IMAGE_TOKENS["eoi_token"]),
        image_token_index=tokenizer.convert_tokens_to_ids(IMAGE_TOKENS["image_token"]),
    )
    model = Gemma3ForConditionalGeneration(config)
    chat = messages(subject)
    chat[-1] = {**chat[-1], "content": chat[-1]["content"] + instructions(RepaintSettings(vision=True))}
    prompt = processor.apply_chat_template(chat, tools=[PaintingEnv.paint], add_generation_prompt=True, tokenize=False)
    _teach(model, tokenizer, prompt, replies)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def _teach(model, tokenizer, prompt: str, replies: tuple[str, ...]) -> None:
    """Fit the model to answer `prompt` with any of `replies`: all of them in one padded batch per step, the loss
    on the replies only, so they stay equally likely."""
    import torch

    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    rows = [
        prompt_ids + tokenizer(reply + tokenizer.eos_token, add_special_tokens=False)["input_ids"] for reply in replies
    ]
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    labels = torch.full((len(rows), width), -100)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for position, row in enumerate(rows):
        ids[position, : len(row)] = torch.tensor(row)
        labels[position, len(prompt_ids) : len(row)] = torch.tensor(row[len(prompt_ids) :])
        mask[position, : len(row)] = 1
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    model.train()
    for _ in range(TRAIN_STEPS):
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def tiny_smoke_overrides(run_dir: Path, steps: int, generations: int, **extra: object) -> dict[str, object]:
    """The smoke preset's overrides that train the taught tiny policy in seconds: one group a step in one micro-batch,
    replies of a few tokens, one browser. `extra` adds or replaces settings (dotted keys as keyword names are not
    Python, so pass them through a dict: `**{"training.learning_rate": 1e-2}`)."""
    return {
        "run_dir": str(run_dir),
        "training.model": str(tiny_sketcher()),
        "training.steps": steps,
        "training.num_generations": generations,
        "training.per_device_batch_size": generations,
        "training.gradient_accumulation_steps": 1,
        "training.warm_start_examples": 0,
        "training.prompt": "full",
        "training.max_completion_length": 8,
        "render.browsers": 1,
        **extra,
    }


def tiny_smoke_cli(run_dir: Path, steps: int, generations: int, *extra: str) -> list[str]:
    """The same run as `tiny_smoke_overrides`, as the arguments of `watercolour train` (the browsers left to the
    caller: a test of several processes gives each its own)."""
    return [
        "train",
        "--preset",
        "smoke",
        "--steps",
        str(steps),
        "--run-dir",
        str(run_dir),
        *extra,
        f"training.model={tiny_sketcher()}",
        f"training.num_generations={generations}",
        f"training.per_device_batch_size={generations}",
        "training.gradient_accumulation_steps=1",
        "training.warm_start_examples=0",
        "training.prompt=full",
        "training.max_completion_length=8",
    ]
