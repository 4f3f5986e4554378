"""An update micro-batch is cut to the columns its rows hold, and the loss and its gradients are the padded batch's."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from watercolour.training.trainer import trimmed


def micro_batch(prompt_lengths: list[int], completion_lengths: list[int], prompt_width: int, width: int) -> dict:
    """TRL's layout: prompts padded on the left, completions on the right, per-token fields as wide as completions."""
    generator = torch.Generator().manual_seed(0)
    rows = len(prompt_lengths)
    prompt_mask = torch.zeros(rows, prompt_width, dtype=torch.long)
    completion_mask = torch.zeros(rows, width, dtype=torch.long)
    for row, (prompt, completion) in enumerate(zip(prompt_lengths, completion_lengths, strict=True)):
        prompt_mask[row, prompt_width - prompt :] = 1
        completion_mask[row, :completion] = 1
    return {
        "prompt_ids": torch.randint(3, 200, (rows, prompt_width), generator=generator) * prompt_mask,
        "prompt_mask": prompt_mask,
        "completion_ids": torch.randint(3, 200, (rows, width), generator=generator) * completion_mask,
        "completion_mask": completion_mask,
        "old_per_token_logps": torch.randn(rows, width, generator=generator, dtype=torch.float64),
        "advantages": torch.tensor([0.8, -0.5][:rows], dtype=torch.float64),
        "num_items_in_batch": torch.tensor(int(completion_mask.sum())),
    }


def test_it_cuts_the_columns_no_row_holds_and_keeps_every_held_one() -> None:
    batch = micro_batch([5, 3], [7, 4], prompt_width=9, width=20)
    cut = trimmed(batch)
    assert cut["prompt_ids"].shape == cut["prompt_mask"].shape == (2, 5)  # the longer prompt's 5 columns
    assert cut["completion_ids"].shape == cut["completion_mask"].shape == cut["old_per_token_logps"].shape == (2, 7)
    assert torch.equal(cut["prompt_ids"], batch["prompt_ids"][:, 4:])
    assert torch.equal(cut["completion_ids"], batch["completion_ids"][:, :7])
    assert torch.equal(cut["old_per_token_logps"], batch["old_per_token_logps"][:, :7])
    # Nothing held is lost; per-row fields and scalars pass through.
    assert cut["completion_mask"].sum() == batch["completion_mask"].sum() == cut["num_items_in_batch"]
    assert cut["prompt_mask"].sum() == batch["prompt_mask"].sum()
    assert cut["advantages"] is batch["advantages"]


def test_a_micro_batch_that_fills_its_columns_or_carries_images_is_left_whole() -> None:
    full = micro_batch([9], [20], prompt_width=9, width=20)
    assert trimmed(full) is full
    images = {**micro_batch([5], [7], prompt_width=9, width=20), "pixel_values": torch.zeros(1, 3)}
    assert trimmed(images) is images


@pytest.mark.timeout(600)
def test_the_loss_and_gradients_of_a_cut_micro_batch_are_the_padded_ones(tmp_path: Path) -> None:
    """On the recipe's layer kinds (Gated DeltaNet, full attention with rotary positions, MoE), TRL's
    loss over a micro-batch padded as TRL pads it, and over the same micro-batch cut. In float32 (the experts'
    grouped GEMM has no float64): equal up to float32's rounding of sums taken in another order."""
    from bench.gpu.step import bench_config, make_trainer
    from watercolour.rehearsal import shapes

    tokenizer = shapes.shape_tokenizer()
    model = shapes.build_model("tiny-qwen3.5-moe", tokenizer, "cpu", torch.float32)
    trainer = make_trainer(model, tokenizer, bench_config(2, 24, 1, "fast", tmp_path), 1)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = trainer.args.gradient_accumulation_steps  # the training loop's
    batch = micro_batch([6, 4], [9, 5], prompt_width=11, width=23)
    batch["old_per_token_logps"] = batch["old_per_token_logps"] - 3.0  # the ratio to the policy and its clip enter

    def loss_and_gradients(inputs: dict) -> tuple[torch.Tensor, list[torch.Tensor]]:
        trainer.model.zero_grad(set_to_none=True)
        loss = trainer.compute_loss(trainer.model, inputs)
        loss.backward()
        grads = [p.grad.clone() for p in trainer.model.parameters() if p.requires_grad and p.grad is not None]
        return loss.detach(), grads

    padded_loss, padded_grads = loss_and_gradients(batch)
    cut = trimmed(batch)
    assert cut["completion_ids"].shape[1] == 9 and cut["prompt_ids"].shape[1] == 6
    cut_loss, cut_grads = loss_and_gradients(cut)
    assert padded_loss != 0
    torch.testing.assert_close(cut_loss, padded_loss, rtol=1e-6, atol=0)
    assert len(cut_grads) == len(padded_grads) > 0 and any(g.abs().sum() > 0 for g in padded_grads)
    for a, b in zip(cut_grads, padded_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-8)  # the largest is about 2e-3


def test_the_trainer_hands_its_update_the_cut_micro_batch(tmp_path: Path) -> None:
    from bench.gpu.step import bench_config, make_trainer
    from watercolour.rehearsal import shapes

    tokenizer = shapes.shape_tokenizer()
    model = shapes.build_model("tiny-qwen3.5-moe", tokenizer, "cpu", torch.float32)
    trainer = make_trainer(model, tokenizer, bench_config(2, 24, 1, "fast", tmp_path), 1)
    batch = micro_batch([6, 4], [9, 5], prompt_width=11, width=23)
    # What TRL slices a micro-batch from between two generations (a step that does not generate).
    assert trainer.args.steps_per_generation > 1
    trainer._buffered_inputs, trainer._step = [batch] * trainer.args.steps_per_generation, 1
    trainer.model.train()
    assert trainer._prepare_inputs([])["completion_ids"].shape[1] == 9
    trainer.trim_micro_batches = False
    assert trainer._prepare_inputs([])["completion_ids"].shape[1] == 23
