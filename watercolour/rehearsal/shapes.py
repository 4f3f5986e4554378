"""Policies named by their published shape, with random weights: `training.model=shape:qwen3.5-35b-a3b`.

What a run costs on a GPU (generation, the update, memory) depends on the policy's shape, not on its weight values,
so a rehearsal builds the policy with random weights straight on the device: no download, and nothing saved in
full (a run's checkpoints hold the LoRA adapter and the optimizer only). The numbers below are the architecture
fields of each model's `config.json` on the Hugging Face hub, copied as published (fields that do not change the
compute, such as token ids, are left out); `SOURCES` names each model:

- SmolLM2-135M: huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/blob/main/config.json
- Qwen3-4B: huggingface.co/Qwen/Qwen3-4B/blob/main/config.json (Qwen3-4B-Instruct-2507 has the same shape)
- Qwen3-8B: huggingface.co/Qwen/Qwen3-8B/blob/main/config.json
- Qwen3.5-35B-A3B (the recipe's policy): the `text_config` of huggingface.co/Qwen/Qwen3.5-35B-A3B/blob/main/
  config.json, which transformers 5.23 ships as the defaults of `Qwen3_5MoeTextConfig` (its docstring names that
  checkpoint); they agree with the recipe's own account of the model (40 layers, 30 of them linear attention, 256
  routed experts holding 32.2B parameters). The text model is built (`Qwen3_5MoeForCausalLM`): the vision tower
  does nothing for a text prompt. `qwen3.5-35b-a3b-4l` is the same layers, four of them (three linear attention, one
  full), for checks that need a float32 copy of the policy beside it (64.6 GiB in bf16 for the 40).
- `tiny-qwen3.5-moe`: the same kinds of layer at widths a CPU trains in seconds (`watercolour.policy.loading`'s
  tiny Qwen3.5 MoE text tower), for the rehearsal's own tests.

The tokenizer is a byte-level BPE trained in a second on the prompts, small enough that the recipe's system prompt
comes to about as many tokens as a real tokenizer gives it (~870), so prefill and cache lengths are realistic.
"""

from __future__ import annotations

from typing import Any

from watercolour.policy.loading import TINY_MOE_TEXT, tiny_tokenizer


SHAPES: dict[str, dict[str, Any]] = {
    "smollm2-135m": dict(
        model_type="llama",
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=49152,
        max_position_embeddings=8192,
        rms_norm_eps=1e-5,
        rope_theta=100000.0,
        tie_word_embeddings=True,
    ),
    "qwen3-4b": dict(
        model_type="qwen3",
        hidden_size=2560,
        intermediate_size=9728,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
        max_position_embeddings=40960,
        rms_norm_eps=1e-6,
        rope_theta=1000000.0,
        tie_word_embeddings=True,
    ),
    "qwen3-8b": dict(
        model_type="qwen3",
        hidden_size=4096,
        intermediate_size=12288,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        vocab_size=151936,
        max_position_embeddings=40960,
        rms_norm_eps=1e-6,
        rope_theta=1000000.0,
        tie_word_embeddings=False,
    ),
    "qwen3.5-35b-a3b": dict(
        model_type="qwen3_5_moe_text",
        hidden_size=2048,
        num_hidden_layers=40,
        full_attention_interval=4,
        num_attention_heads=16,
        num_key_value_heads=2,
        head_dim=256,
        linear_conv_kernel_dim=4,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
        linear_num_key_heads=16,
        linear_num_value_heads=32,
        moe_intermediate_size=512,
        shared_expert_intermediate_size=512,
        num_experts=256,
        num_experts_per_tok=8,
        vocab_size=248320,
        max_position_embeddings=262144,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
    ),
}
SHAPES["qwen3.5-35b-a3b-4l"] = {**SHAPES["qwen3.5-35b-a3b"], "num_hidden_layers": 4}
SHAPES["tiny-qwen3.5-moe"] = {
    "model_type": "qwen3_5_moe_text",
    **TINY_MOE_TEXT,
    "full_attention_interval": 4,
    "linear_conv_kernel_dim": 4,
    "vocab_size": 1024,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
}
# The hub ids whose shape each name is: a preset's model names its shape (`shape_of_model`).
SOURCES = {
    "smollm2-135m": "HuggingFaceTB/SmolLM2-135M-Instruct",
    "qwen3-4b": "Qwen/Qwen3-4B",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3.5-35b-a3b": "Qwen/Qwen3.5-35B-A3B",
}
PREFIX = "shape:"
# The tokenizer's size: small enough that the full system prompt comes to about as many tokens as SmolLM2's
# tokenizer gives it (~870), so prefill and cache lengths are realistic.
TOKENIZER_VOCAB = 800


class UnknownShape(ValueError):
    """A `shape:` policy names no published shape."""


def shape_name(model: str) -> str | None:
    """The shape a `training.model` names (`shape:<name>`), or None for a real model; an unknown one is an error."""
    if not model.startswith(PREFIX):
        return None
    name = model.removeprefix(PREFIX)
    if name not in SHAPES:
        raise UnknownShape(f"training.model={model!r} names no shape: choose one of {', '.join(sorted(SHAPES))}")
    return name


def shape_of_model(model: str) -> str:
    """The `shape:` spec of a configured model: itself when it is one, else the published shape of its hub id."""
    if shape_name(model) is not None:
        return model
    for name, source in SOURCES.items():
        if source.lower() == model.lower():
            return PREFIX + name
    raise UnknownShape(
        f"no published shape is known for {model!r}: name one with training.model=shape:NAME "
        f"({', '.join(sorted(SHAPES))})"
    )


def build_model(shape: str, tokenizer: Any, device: str, dtype: Any, seed: int = 0) -> Any:
    """A randomly initialised causal LM of the named shape, built on `device` (no CPU copy of the weights)."""
    import torch
    import transformers

    fields = dict(SHAPES[shape])
    model_type = fields.pop("model_type")
    config = transformers.AutoConfig.for_model(
        model_type,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **fields,
    )
    # The tokenizer's ids all lie below the published vocabulary, so the embedding and head keep their
    # published size (the head is a large part of each decode step).
    assert len(tokenizer) <= config.vocab_size
    torch.manual_seed(seed)
    model_class: Any = transformers.MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    with torch.device(device):
        model = model_class._from_config(config, dtype=dtype)
    model.config.architectures = [model_class.__name__]
    model.config.use_cache = True
    return model


def shape_tokenizer() -> Any:
    """A byte-level BPE trained in a second on the prompts (policy.tiny_tokenizer), with a ChatML template."""
    return tiny_tokenizer([], vocab_size=TOKENIZER_VOCAB)


def shape_policy(name: str, bf16: bool) -> tuple[Any, Any]:
    """(model, tokenizer) of a shape, built with random weights on this process's device (its GPU under
    `accelerate launch`), in bfloat16 when the run trains in it."""
    import torch
    from accelerate import PartialState

    tokenizer = shape_tokenizer()
    model = build_model(name, tokenizer, PartialState().device, torch.bfloat16 if bf16 else torch.float32)
    return model, tokenizer
