"""The trained LoRA adapter: export it with what it was trained on, and load it back in the one tested way.

The published recipe's adapter loaded silently wrong: `AutoModelForCausalLM` resolved its multimodal base to a
text-only class whose layers sit at other module paths, and 700 of 920 adapter tensors were dropped without an
error, so its "after" probe measured the base model. Here the base is built from the class named in its own
`config.architectures[0]` (the class TRL trained), and every tensor in the adapter file is checked against the
loaded model before the policy is returned.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from watercolour.policy.loading import load_base, resolve_model


METADATA_FILE = "watercolour_adapter.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"


class AdapterLoadError(RuntimeError):
    """The adapter's tensors did not all land in the model they were loaded into."""


def export_adapter(
    trainer_or_model: Any,
    out_dir: Path,
    *,
    base_model: str,
    config_name: str = "",
    step: int | None = None,
    state_dict: dict[str, Any] | None = None,
) -> Path:
    """Write the PEFT adapter (and the tokenizer, when a trainer is given) plus `watercolour_adapter.json`.

    `base_model` is the name the run was configured with (a policy name, hub id or path), so loading resolves
    it the same way training did. `state_dict` is the model's full state dict when its own is sharded (FSDP:
    `accelerator.get_state_dict` gathers it).
    """
    out_dir = Path(out_dir)
    model = getattr(trainer_or_model, "model", trainer_or_model)
    tokenizer = getattr(trainer_or_model, "processing_class", None)
    if step is None and hasattr(trainer_or_model, "state"):
        step = trainer_or_model.state.global_step
    model.save_pretrained(out_dir, state_dict=state_dict)
    if tokenizer is not None:
        tokenizer.save_pretrained(out_dir)
    metadata = {
        "base_model": base_model,
        "architecture": model.get_base_model().config.architectures[0],
        "config_name": config_name,
        "step": step,
    }
    (out_dir / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
    return out_dir


def base_model_name(adapter_dir: Path) -> str:
    """The base the adapter was trained on: our metadata first, else PEFT's own adapter config."""
    metadata = Path(adapter_dir) / METADATA_FILE
    if metadata.is_file():
        return str(json.loads(metadata.read_text())["base_model"])
    return str(json.loads((Path(adapter_dir) / "adapter_config.json").read_text())["base_model_name_or_path"])


def verify_adapter(model: Any, adapter_dir: Path) -> None:
    """Raise unless every tensor in the adapter file is in the model, with the saved value."""
    import torch
    from peft.utils import get_peft_model_state_dict
    from safetensors.torch import load_file

    saved = load_file(str(Path(adapter_dir) / ADAPTER_WEIGHTS))
    loaded = get_peft_model_state_dict(model)
    missing = sorted(key for key in saved if key not in loaded)
    differing = sorted(
        key
        for key in saved
        if key in loaded and not torch.equal(loaded[key].detach().cpu().to(saved[key].dtype), saved[key])
    )
    if missing or differing:
        raise AdapterLoadError(
            f"{len(missing)} of {len(saved)} adapter tensors did not load and {len(differing)} hold other values "
            f"(first: {(missing + differing)[:3]}); the base model's class does not match the one trained "
            f"({base_model_name(adapter_dir)})"
        )


def load_policy(adapter_dir: Path, trainable: bool = False, dtype: Any = None) -> tuple[Any, Any]:
    """The base model with the adapter applied, verified tensor by tensor, and its tokenizer."""
    from peft import PeftModel
    from transformers import AutoTokenizer

    adapter_dir = Path(adapter_dir)
    base_path = resolve_model(base_model_name(adapter_dir))
    model = PeftModel.from_pretrained(load_base(base_path, dtype), adapter_dir, is_trainable=trainable)
    verify_adapter(model, adapter_dir)
    has_tokenizer = (adapter_dir / "tokenizer_config.json").is_file()
    tokenizer = AutoTokenizer.from_pretrained(adapter_dir if has_tokenizer else base_path)
    return model, tokenizer
