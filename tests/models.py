"""A tiny policy for training tests that actually learns something: a random Llama taught three replies.

A random model writes token soup, every rollout fails the gate, every reward is 0, every advantage is 0 and
LoRA never moves, so a training test on it proves nothing. This one is the tiny random Llama of
`watercolour.policy.tiny_random_policy` (its tokenizer trained on the prompt and the replies, so a reply is a
token or two), fine-tuned for a few seconds on the real chat prompt to answer with one of three gate fixtures:
two sketches the gate admits (with different rewards) and one that calls a bare `ellipse` (refused). Sampling
at temperature 1 mixes them, so groups have reward variance and GRPO has a gradient. Built once and cached under the repository's `data/` (gitignored), keyed by its inputs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from watercolour.policy import TINY_CONFIG, TINY_VOCAB, save_model_folder, tiny_random_policy
from watercolour.prompt import DEFAULT_SUBJECT, messages


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
        from watercolour.config import RepaintSettings
        from watercolour.painting_env import PaintingEnv, instructions
        from watercolour.tool_chat import use_tool_template

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
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    # All three replies in one padded batch per step, the loss on the replies only: they stay equally likely.
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
    return save_model_folder(model, tokenizer, out_dir)
