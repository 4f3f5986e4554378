"""The VLM repaint path end to end: a tiny random vision-language policy (Gemma 3 built from a config, its tokenizer
and processor made here) trains one GRPO step through TRL's environment_factory. It calls `paint`, the painting
comes back as an image block, TRL feeds it through the policy's processor into the next generation and the loss,
and the vision tower sees it (the prompt holds no picture, so everything the tower saw came from a tool result)."""

from __future__ import annotations

import io
import os

import pytest

from deployments.presets import load_config
from tests.models import tiny_vision_painter


GENERATIONS = 2

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_vision_policy_sees_its_painting_in_the_tool_result_and_trains(tmp_path) -> None:
    os.environ.setdefault("TRACKIO_DIR", str(tmp_path / "trackio"))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from PIL import Image
    from transformers import ProcessorMixin

    from watercolour.training.trainer import build_trainer, close_reward

    config = load_config(
        "repaint",
        {
            "run_dir": str(tmp_path),
            "training.model": str(tiny_vision_painter()),
            "training.steps": 1,
            "training.num_generations": GENERATIONS,
            "training.per_device_batch_size": GENERATIONS,
            "training.gradient_accumulation_steps": 1,  # one group a step (the preset accumulates four episodes)
            "training.max_completion_length": 1536,
            "repaint.vision": True,
            "repaint.warm_start_examples": 0,
            "render.browsers": 1,
        },
    )
    trainer = build_trainer(config, tmp_path, echo=False)
    assert isinstance(trainer.processing_class, ProcessorMixin)  # TRL's VLM path, not a text tokenizer
    vision = next(module for name, module in trainer.model.named_modules() if name.endswith("vision_tower"))
    seen: list[tuple[int, ...]] = []

    def saw(module, args, kwargs, output) -> None:
        pixels = kwargs["pixel_values"] if "pixel_values" in kwargs else args[0]
        seen.append(tuple(pixels.shape))

    hook = vision.register_forward_hook(saw, with_kwargs=True)
    initial = {name: tensor.detach().clone() for name, tensor in trainer.model.named_parameters() if "lora_" in name}
    try:
        trainer.train()
    finally:
        hook.remove()
        close_reward(trainer)
    painted = [env for env in trainer.environments if env.turns]
    assert painted, "the policy never called paint"
    for env in painted:
        picture = env.turns[0].observation.png
        assert picture is not None and Image.open(io.BytesIO(picture)).size == (600, 600)
    # The prompt holds no picture: whatever the vision tower saw came from the tool results.
    assert seen and all(shape[-2:] == (32, 32) for shape in seen), seen
    final = {name: tensor.detach() for name, tensor in trainer.model.named_parameters() if "lora_" in name}
    assert any(not final[name].equal(initial[name]) for name in final), "no LoRA parameter moved"
