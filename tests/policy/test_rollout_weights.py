"""Rollouts with the LoRA merged into the weights: the same policy decodes, and the base comes back bit for bit."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

from deployments.presets import load_config
from tests.models import tiny_smoke_overrides
from watercolour.policy.generation import TRL_PATH
from watercolour.policy.rollout_weights import MergedForRollouts, lora_layers


def lora_policy(dtype: torch.dtype) -> torch.nn.Module:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2,
    )  # fmt: skip
    model = get_peft_model(LlamaForCausalLM(config), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:  # a trained adapter: B starts at zero, which would make the merge a no-op
                parameter.normal_(std=0.5)
    return model.to(dtype)


def base_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters() if "base_layer" in name}


IDS = torch.tensor([[1, 5, 9, 2, 7, 3]])


def test_a_rollout_decodes_with_the_merged_adapter_and_the_base_comes_back_bit_for_bit() -> None:
    model = lora_policy(torch.float32).eval()
    before = base_weights(model)
    with torch.no_grad():
        attached = model(IDS).logits
    merge = MergedForRollouts()
    with merge(model), torch.no_grad():
        assert all(layer.merged for layer in lora_layers(model))
        assert any(not torch.equal(value, before[name]) for name, value in base_weights(model).items())
        merged = model(IDS).logits
    torch.testing.assert_close(merged, attached, rtol=1e-5, atol=1e-5)
    assert not any(layer.merged for layer in lora_layers(model))
    after = base_weights(model)
    assert all(torch.equal(after[name], before[name]) for name in before)
    with torch.no_grad():
        assert torch.equal(model(IDS).logits, attached)


def test_in_bf16_peft_unmerge_drifts_and_the_copy_does_not() -> None:
    """Why the weights are copied: PEFT's unmerge subtracts the delta again, and bf16 rounding does not undo."""
    model = lora_policy(torch.bfloat16)
    before = base_weights(model)
    model.merge_adapter()
    model.unmerge_adapter()
    drifted = sum(not torch.equal(value, before[name]) for name, value in base_weights(model).items())
    assert drifted > 0

    model = lora_policy(torch.bfloat16)
    before = base_weights(model)
    merge = MergedForRollouts()
    for _ in range(3):  # copies are reused from rollout to rollout
        with merge(model):
            pass
    assert all(torch.equal(value, before[name]) for name, value in base_weights(model).items())


def test_a_rollout_that_fails_still_restores_the_base() -> None:
    model = lora_policy(torch.bfloat16)
    before = base_weights(model)
    with pytest.raises(RuntimeError, match="decode failed"), MergedForRollouts()(model):
        raise RuntimeError("decode failed")
    assert all(torch.equal(value, before[name]) for name, value in base_weights(model).items())
    assert not any(layer.merged for layer in lora_layers(model))


def grpo_run(run_dir: Path, merge: bool) -> tuple[list[str], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Two GRPO steps of the taught tiny policy: (step 2's completions, base weights before, base weights after)."""
    os.environ.setdefault("TRACKIO_DIR", str(run_dir / "trackio"))
    from watercolour.run_records.rollout_store import RolloutStore
    from watercolour.training.trainer import build_trainer, close_reward

    overrides = tiny_smoke_overrides(run_dir, 2, 4, **{"training.learning_rate": 1e-2})
    plan = replace(TRL_PATH, merge_adapter=merge)
    trainer = build_trainer(load_config("smoke", overrides), run_dir, echo=False, plan=plan)
    assert (trainer.merge_for_rollouts is not None) is merge
    before = base_weights(trainer.model)
    try:
        trainer.train()
    finally:
        close_reward(trainer)
    rows = RolloutStore(run_dir, 4).rows()
    return [row["completion"] for row in rows if row["step"] == 2], before, base_weights(trainer.model)


@pytest.mark.browser
@pytest.mark.slow
def test_training_with_merged_rollouts_samples_what_the_attached_adapter_samples(tmp_path: Path) -> None:
    merged, before, after = grpo_run(tmp_path / "merged", merge=True)
    attached, _, _ = grpo_run(tmp_path / "attached", merge=False)
    # Step 2 decodes with the adapter step 1 trained (not zero): the same tokens either way, on the same seed.
    assert merged == attached and len(merged) == 4
    assert all(torch.equal(after[name], before[name]) for name in before)
