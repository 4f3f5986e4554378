"""The policy shapes the GPU benchmark builds, as published, and how a random model of one is made.

Timings of generation and of a LoRA update depend on a model's shape, not on its weight values, so the
benchmark builds each policy with random weights straight on the GPU: no download, nothing to carry. The
numbers below are the architecture fields of each model's `config.json` on the Hugging Face hub, copied as
published (fields that do not change the compute, such as token ids, are left out):

- SmolLM2-135M: huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/blob/main/config.json
- Qwen3-4B: huggingface.co/Qwen/Qwen3-4B/blob/main/config.json (Qwen3-4B-Instruct-2507 has the same shape)
- Qwen3-8B: huggingface.co/Qwen/Qwen3-8B/blob/main/config.json
- Qwen3.5-35B-A3B (the recipe's policy): the `text_config` of huggingface.co/Qwen/Qwen3.5-35B-A3B/blob/main/
  config.json, which transformers 5.23 ships as the defaults of `Qwen3_5MoeTextConfig` (its docstring names that
  checkpoint); they agree with the recipe's own account of the model (40 layers, 30 of them linear attention, 256
  routed experts holding 32.2B parameters). The benchmark builds the text model (`Qwen3_5MoeForCausalLM`): the
  vision tower does nothing for a text prompt. `qwen3.5-35b-a3b-4l` is the same layers, four of them (three linear
  attention, one full), for checks that need a float32 copy of the policy beside it (64.6 GiB in bf16 for the 40).
"""

from __future__ import annotations

from typing import Any


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
# The bench tokenizer's size: small enough that the full system prompt comes to about as many tokens as
# SmolLM2's tokenizer gives it (~870), so prefill and cache lengths are realistic.
TOKENIZER_VOCAB = 800


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


def bench_tokenizer() -> Any:
    """A byte-level BPE trained in a second on the prompts (policy.tiny_tokenizer), with a ChatML template."""
    from watercolour.policy.loading import tiny_tokenizer

    return tiny_tokenizer([], vocab_size=TOKENIZER_VOCAB)
