"""Each update micro-batch cut to the columns its own rows hold.

TRL pads a step's completions to the longest completion of the whole group and its prompts to the longest prompt,
then slices the update's micro-batches out of that padded batch. With the recipe's micro-batch of 1 × 8, a row of
1,400 tokens in a group whose longest row has 6,770 runs every layer of the update over 6,770 completion positions:
the update of that group computed 54,160 completion positions for its 22,190 completion tokens. The padding changes nothing
the loss sees (completions are padded on the right, after every real token of a causal model; prompts on the left,
masked, and rotary positions enter attention only as differences), but every layer computes it. Cutting each
micro-batch to the columns some row of it holds removes that work and leaves the loss and its gradients as they
were (`tests/training/test_micro_batch.py` compares both).
"""

from __future__ import annotations

from typing import Any


# TRL's per-completion-token fields (GRPOTrainer._generate_and_score_completions), cut with the completions.
PER_TOKEN = (
    "completion_ids",
    "completion_mask",
    "tool_mask",
    "old_per_token_logps",
    "sampling_per_token_logps",
    "ref_per_token_logps",
    "importance_sampling_ratio",
    "advantages",
)
PROMPT = ("prompt_ids", "prompt_mask")
# Fields whose layout ties prompt and completion columns to images: a micro-batch that has one is left whole.
MULTIMODAL = (
    "pixel_values",
    "image_grid_thw",
    "pixel_attention_mask",
    "token_type_ids",
    "mm_token_type_ids",
    "image_position_ids",
)


def trimmed(inputs: dict[str, Any]) -> dict[str, Any]:
    """The micro-batch without the prompt columns no row holds (left) and the completion columns after its longest
    row (right); the same dict when there is nothing to cut or the micro-batch carries images."""
    if any(key in inputs for key in MULTIMODAL) or "completion_mask" not in inputs:
        return inputs
    completion_mask, prompt_mask = inputs["completion_mask"], inputs["prompt_mask"]
    width = completion_mask.size(1)
    held = completion_mask.any(0).nonzero()
    keep = int(held[-1]) + 1 if len(held) else 1  # a fully masked micro-batch keeps one column
    first = prompt_mask.any(0).nonzero()
    drop = int(first[0]) if len(first) else 0
    if keep == width and drop == 0:
        return inputs
    cut = dict(inputs)
    for key in PER_TOKEN:
        value = cut.get(key)
        if value is not None and getattr(value, "dim", lambda: 0)() >= 2 and value.size(1) == width:
            cut[key] = value[:, :keep]
    for key in PROMPT:
        cut[key] = cut[key][:, drop:]
    return cut
