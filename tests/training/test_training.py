"""GRPO training end to end on CPU: the tiny taught policy, the composite reward with the offline backends and
the real renderer, a few steps at a high learning rate; then the exported adapter, loaded back and checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deployments.presets import load_config
from tests.models import tiny_smoke_overrides
from watercolour.run_records.curves import CurvesFile
from watercolour.run_records.rollout_store import RolloutStore


STEPS = 3
GENERATIONS = 4

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One short run, shared by the tests below: (trainer, initial LoRA weights, config, run_dir)."""
    run_dir = tmp_path_factory.mktemp("run")
    # trackio reads TRACKIO_DIR once, when TRL first imports it; keep this run's database out of the home cache.
    os.environ.setdefault("TRACKIO_DIR", str(run_dir / "trackio"))
    from watercolour.training.trainer import build_trainer, close_reward

    config = load_config(
        "smoke", tiny_smoke_overrides(run_dir, STEPS, GENERATIONS, **{"training.learning_rate": 1e-2})
    )
    trainer = build_trainer(config, run_dir, echo=False)
    initial = {name: tensor.detach().clone() for name, tensor in trainer.model.named_parameters() if "lora_" in name}
    try:
        trainer.train()
    finally:
        close_reward(trainer)
    return trainer, initial, config, run_dir


def test_training_moves_the_lora_weights(trained):
    trainer, initial, _, _ = trained
    final = {name: tensor.detach() for name, tensor in trainer.model.named_parameters() if "lora_" in name}
    assert final.keys() == initial.keys() and final
    changed = [name for name in final if not final[name].equal(initial[name])]
    assert changed, "no LoRA parameter moved in three steps at lr 1e-2"


def test_lora_covers_every_linear_layer_of_the_policy(trained):
    trainer, initial, _, _ = trained
    projections = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    wrapped = {name.split(".lora_")[0].rsplit(".", 1)[-1] for name in initial}
    assert wrapped == projections


def test_every_rollout_is_recorded_once_per_step(trained):
    _, _, config, run_dir = trained
    store = RolloutStore(run_dir, GENERATIONS)
    assert store.steps() == [1, 2, 3]
    rows = store.rows()
    assert len(rows) == STEPS * GENERATIONS
    assert len({(row["step"], row["group"], row["index"]) for row in rows}) == len(rows)
    for row in rows:
        assert row["preset"] == config.name and row["completion"]
        if row["png"] is not None:
            assert (run_dir / row["png"]).read_bytes().startswith(b"\x89PNG")
    # Both outcomes occur: the taught replies include one the gate refuses and two it admits.
    assert {row["passed"] for row in rows} == {True, False}


def test_store_loads_with_datasets(trained):
    from datasets import load_dataset

    _, _, _, run_dir = trained
    table = load_dataset("parquet", data_files=RolloutStore(run_dir, GENERATIONS).data_files(), split="train")
    assert table.num_rows == STEPS * GENERATIONS
    assert {"step", "prompt", "completion", "sketch", "png", "reward", "parts", "violations"} <= set(
        table.column_names
    )


def test_curves_have_one_row_per_step_with_the_time_split(trained):
    _, _, _, run_dir = trained
    rows = CurvesFile(run_dir).read()
    assert [int(row["step"]) for row in rows] == [1, 2, 3]
    for row in rows:
        assert float(row["generate_s"]) > 0 and float(row["score_s"]) > 0 and row["update_s"]
        assert 0 <= float(row["gate_pass_rate"]) <= 1 and row["reward_mean"] and row["dead_letters"] == "0.0"


def test_exported_adapter_loads_back_verified_and_generates(trained, tmp_path):
    import torch

    from watercolour.policy.adapter import export_adapter, load_policy

    trainer, _, config, _ = trained
    adapter_dir = export_adapter(trainer, tmp_path / "adapter", base_model=config.training.model, config_name="smoke")
    model, tokenizer = load_policy(adapter_dir)
    trained_lora = {name: p for name, p in trainer.model.named_parameters() if "lora_" in name}
    loaded_lora = {name: p for name, p in model.named_parameters() if "lora_" in name}
    assert loaded_lora.keys() == trained_lora.keys()
    assert all(loaded_lora[name].equal(trained_lora[name].detach()) for name in trained_lora)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Paint a poppy."}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        output = model.generate(**prompt, max_new_tokens=4, do_sample=False)
    assert output.shape[1] > prompt["input_ids"].shape[1]


def test_an_adapter_loaded_into_the_wrong_architecture_is_refused(trained, tmp_path):
    """The published recipe's failure: tensors whose module paths do not exist were dropped without a word."""
    import json

    from peft import PeftModel
    from transformers import AutoConfig, LlamaForCausalLM

    from watercolour.policy.adapter import AdapterLoadError, export_adapter, verify_adapter

    trainer, _, config, _ = trained
    adapter_dir = export_adapter(trainer, tmp_path / "adapter", base_model=config.training.model)
    assert (
        json.loads((Path(adapter_dir) / "watercolour_adapter.json").read_text())["architecture"] == "LlamaForCausalLM"
    )
    shallower = AutoConfig.from_pretrained(config.training.model)
    shallower.num_hidden_layers = 1
    model = PeftModel.from_pretrained(LlamaForCausalLM(shallower), adapter_dir)
    with pytest.raises(AdapterLoadError, match="did not load"):
        verify_adapter(model, adapter_dir)
