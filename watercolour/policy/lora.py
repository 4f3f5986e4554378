"""What every training of the policy shares, GRPO (`watercolour.training.trainer`) and the warm start's SFT
(`watercolour.training.warm_start`): the LoRA it trains and the device settings it trains with.

Imports torch and peft at the top: only code that is about to train imports it.
"""

from __future__ import annotations

import torch
from peft import LoraConfig

from ground.run_config import TrainingSettings


def device_settings(training: TrainingSettings) -> tuple[bool, bool]:
    """bf16 and gradient checkpointing: on with a GPU unless the configuration says otherwise."""
    cuda = torch.cuda.is_available()
    bf16 = training.bf16 if training.bf16 is not None else cuda and torch.cuda.is_bf16_supported()
    checkpointing = training.gradient_checkpointing if training.gradient_checkpointing is not None else cuda
    return bool(bf16), bool(checkpointing)


def lora_config(training: TrainingSettings) -> LoraConfig:
    """LoRA on every linear layer: a hand-written module list reached 10 of 40 layers of the recipe's MoE.

    On a multimodal policy that includes the vision tower, as the recipe's adapter did (Qwen3.5-35B-A3B: 110 of its
    460 modules, 7.95M of 30.4M parameters). A text prompt never runs that tower, so those pairs get no gradient
    and stay the no-op they start as (B = 0): 32 MB of float32 in each adapter, no optimizer state, no compute. A
    policy that sees its paintings (`repaint.vision`) trains them. Leaving the tower out would take a list of each
    architecture's vision module names, the kind of hand-written list that missed 30 of those 40 layers.
    """
    return LoraConfig(
        r=training.lora_r,
        lora_alpha=training.lora_alpha,
        lora_dropout=0.0,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )
