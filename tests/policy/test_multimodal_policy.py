"""The recipe's policy class on CPU: a tiny random Qwen3.5-MoE in the multimodal layout its checkpoint ships (text
and vision towers, the processor files, saved as a model folder) loads through the trainer `watercolour train`
builds as the class its config names, gets LoRA on every linear layer the recipe's `all-linear` reached, takes GRPO
steps, and its adapter loads back verified, while the text-only class an Auto class picks is refused."""

from __future__ import annotations

import importlib.util
import json
import os
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from deployments.presets import load_config
from ground.records import RewardParts
from watercolour.policy import loading as policy
from watercolour.run_records.rollout_store import RolloutStore


STEPS = 2
GENERATIONS = 4
# What LoRA wraps, by family, per layer of each kind (the tiny folder has 3 Gated DeltaNet layers, 1 full-attention
# layer, 4 MoE blocks and a 1-block vision tower; the published one 30, 10, 40 and 27).
LINEAR_ATTENTION = {"in_proj_qkv", "in_proj_z", "in_proj_a", "in_proj_b", "out_proj"}
FULL_ATTENTION = {"q_proj", "k_proj", "v_proj", "o_proj"}
MOE = {"shared_expert.gate_proj", "shared_expert.up_proj", "shared_expert.down_proj", "shared_expert_gate"}
VISION_BLOCK = {"attn.qkv", "attn.proj", "mlp.linear_fc1", "mlp.linear_fc2"}
MERGER = {"merger.linear_fc1", "merger.linear_fc2"}

pytestmark = pytest.mark.slow


class SpreadScorer:
    """A scorer (`rewards.scoring.composite.Scorer`) from each completion's text, never constant in a group (a
    random policy fails every gate, and a constant reward leaves GRPO no gradient); given to the trainer where a
    Prefect run gives its fan-out, so the run's adapter records its rollouts as for any scorer."""

    async def score(self, completions: list, seeds: list, step: Any, subjects: Any = None) -> list:
        return [RewardParts(reward=zlib.crc32(text.encode()) % 1000 / 1000) for text in completions]

    async def prefetch(self, completion: str, **kwargs: Any) -> None:
        return None

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return Path(policy.resolve_model(policy.TINY_MOE, data_dir=tmp_path_factory.mktemp("data")))


@pytest.fixture(scope="module")
def trained(folder, tmp_path_factory):
    """Two GRPO steps of the tiny folder, named as a run names its policy: (trainer, initial LoRA, config, run_dir)."""
    run_dir = tmp_path_factory.mktemp("run")
    os.environ.setdefault("TRACKIO_DIR", str(run_dir / "trackio"))
    from watercolour.training.trainer import build_trainer

    overrides = {
        "run_dir": str(run_dir),
        "training.model": str(folder),
        "training.steps": STEPS,
        "training.num_generations": GENERATIONS,
        "training.per_device_batch_size": GENERATIONS,
        "training.gradient_accumulation_steps": 1,
        "training.prompt": "full",
        "training.max_completion_length": 8,
        "training.learning_rate": 1e-2,
    }
    config = load_config("smoke", overrides)
    trainer = build_trainer(config, run_dir, echo=False, fan_out=lambda config, run_dir: SpreadScorer())
    initial = {name: tensor.detach().clone() for name, tensor in trainer.model.named_parameters() if "lora_" in name}
    trainer.train()
    return trainer, initial, config, run_dir


def family(module: str) -> str:
    """A wrapped module's family: its path below its layer or block (`mlp.shared_expert.up_proj` -> the last two)."""
    parts = module.split(".")
    if "visual" in parts:
        below = parts[parts.index("blocks") + 2 :] if "blocks" in parts else parts[parts.index("merger") :]
        return ".".join(below)
    return ".".join(parts[-2:]) if parts[-2] == "shared_expert" else parts[-1]


def test_the_folder_is_the_hub_layout(folder):
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["Qwen3_5MoeForConditionalGeneration"]
    assert config["text_config"]["model_type"] == "qwen3_5_moe_text"
    assert config["vision_config"]["model_type"] == "qwen3_5_moe_vision"
    assert Counter(config["text_config"]["layer_types"]) == {"linear_attention": 3, "full_attention": 1}
    assert {"preprocessor_config.json", "video_preprocessor_config.json"} <= {path.name for path in folder.iterdir()}


def test_the_trainer_loads_the_class_the_config_names(trained):
    trainer, _, _, _ = trained
    base = trainer.model.get_base_model()
    assert type(base).__name__ == "Qwen3_5MoeForConditionalGeneration"
    assert base.model.visual is not None and len(base.model.language_model.layers) == 4


def test_lora_reaches_every_linear_layer_of_both_towers(trained):
    trainer, initial, _, _ = trained
    wrapped = Counter(family(name.split(".lora_")[0]) for name in initial if ".lora_A." in name)
    expected = Counter({name: 3 for name in LINEAR_ATTENTION} | {name: 1 for name in FULL_ATTENTION})
    expected |= Counter({name: 4 for name in MOE} | {name: 1 for name in VISION_BLOCK | MERGER})
    assert wrapped == expected
    # The routed experts are fused 3D parameters (no linear layer to wrap) and the router is a bare parameter too;
    # the output head is left out by `all-linear` itself.
    assert not [name for name in initial if ".experts." in name or ".mlp.gate." in name or "lm_head" in name]


def test_a_grpo_step_trains_the_text_tower_and_leaves_the_unused_vision_tower_alone(trained):
    trainer, initial, _, _ = trained
    final = {name: tensor.detach() for name, tensor in trainer.model.named_parameters() if "lora_" in name}
    assert final.keys() == initial.keys()
    moved = {name for name in final if not final[name].equal(initial[name])}
    text = {name for name in final if ".language_model." in name}
    # Every LoRA B of the text tower starts at zero and leaves it; a text prompt never runs the vision tower.
    assert {name for name in text if ".lora_B." in name} <= moved
    assert not {name for name in moved if ".visual." in name}
    # No gradient at all, not a zero one: the optimizer holds no state for the vision pairs.
    with_state = {name for name, p in trainer.model.named_parameters() if p in trainer.optimizer.state}
    assert {name for name in text if ".lora_" in name} <= with_state
    assert not {name for name in with_state if ".visual." in name}


def test_every_rollout_is_recorded(trained):
    _, _, config, run_dir = trained
    rows = RolloutStore(run_dir, GENERATIONS).rows()
    assert [row["step"] for row in rows] == [step for step in range(1, STEPS + 1) for _ in range(GENERATIONS)]
    assert all(row["completion"] and row["preset"] == config.name for row in rows)


def test_the_adapter_loads_back_verified_into_the_same_class(trained, tmp_path):
    from watercolour.policy.adapter import export_adapter, load_policy

    trainer, _, config, _ = trained
    adapter_dir = export_adapter(trainer, tmp_path / "adapter", base_model=config.training.model)
    model, _ = load_policy(adapter_dir)
    assert type(model.get_base_model()).__name__ == "Qwen3_5MoeForConditionalGeneration"
    trained_lora = {name: p for name, p in trainer.model.named_parameters() if "lora_" in name}
    loaded_lora = {name: p for name, p in model.named_parameters() if "lora_" in name}
    assert loaded_lora.keys() == trained_lora.keys()
    assert all(loaded_lora[name].equal(trained_lora[name].detach()) for name in trained_lora)


def test_the_text_only_class_an_auto_class_picks_is_refused(trained, tmp_path):
    """The published recipe's failure: `AutoModelForCausalLM` builds the text-only class, whose layers sit at
    `model.layers`, not `model.language_model.layers`, and has no vision tower."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from watercolour.policy.adapter import AdapterLoadError, export_adapter, verify_adapter

    trainer, _, config, _ = trained
    adapter_dir = export_adapter(trainer, tmp_path / "adapter", base_model=config.training.model)
    text_only = AutoModelForCausalLM.from_pretrained(config.training.model)
    assert type(text_only).__name__ == "Qwen3_5MoeForCausalLM"
    # PEFT wraps the text-only layers and only warns that none of their tensors were in the file; every one is.
    tensors = 2 * sum(1 for name in trainer.model.state_dict() if ".lora_A." in name)
    with pytest.raises(AdapterLoadError, match=f"{tensors} of {tensors} adapter tensors did not load"):
        verify_adapter(PeftModel.from_pretrained(text_only, adapter_dir), adapter_dir)


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is not None, reason="torchvision is installed")
def test_the_checkpoints_processor_needs_torchvision(folder):
    """Why the trainer gives a text run the tokenizer alone: the processor the checkpoint names does not build."""
    from transformers import AutoProcessor

    with pytest.raises(ImportError, match="Torchvision"):
        AutoProcessor.from_pretrained(folder)
