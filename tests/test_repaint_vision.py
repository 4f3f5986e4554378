"""The VLM repaint path end to end, as far as TRL 1.16 takes it: a tiny random vision-language policy (Gemma 3 built
from a config, its tokenizer and processor made here) trains through TRL's environment_factory; it calls `paint`,
the painting comes back as an image block, TRL collects it and runs it through the policy's image processor, and
then TRL's generate call with that picture fails: TRL passes every output of the image processor to `generate`,
and Gemma 3's includes `num_crops`, which the model does not take (docs/repaint.md, "The VLM path", says which
models TRL's tool-image path is built for and why they cannot run here). When TRL drops that field, the
`pytest.raises` below fails and this test is to become the full one-step run."""

from __future__ import annotations

import io
import os

import pytest
from models import tiny_vision_painter

from watercolour.config import load_config


GENERATIONS = 2

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_vision_policy_gets_its_painting_back_as_an_image_until_trl_generates_with_it(tmp_path) -> None:
    os.environ.setdefault("TRACKIO_DIR", str(tmp_path / "trackio"))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from PIL import Image
    from transformers import ProcessorMixin

    from watercolour.trainer import build_trainer, close_reward

    config = load_config(
        "repaint",
        {
            "run_dir": str(tmp_path),
            "training.model": str(tiny_vision_painter()),
            "training.steps": 1,
            "training.num_generations": GENERATIONS,
            "training.per_device_batch_size": GENERATIONS,
            "training.max_completion_length": 1536,
            "repaint.vision": True,
            "repaint.warm_start_examples": 0,
            "render.browsers": 1,
        },
    )
    trainer = build_trainer(config, tmp_path, echo=False)
    assert isinstance(trainer.processing_class, ProcessorMixin)  # TRL's VLM path, not a text tokenizer
    try:
        # `num_crops` comes only from the image processor, run on the tool results' pictures: they reached generate.
        with pytest.raises(ValueError, match=r"model_kwargs.*not used by the model: \['num_crops'\]"):
            trainer.train()
    finally:
        close_reward(trainer)
    painted = [env for env in trainer.environments if env.turns]
    assert painted, "the policy never called paint"
    for env in painted:
        picture = env.turns[0].observation.png
        assert picture is not None and Image.open(io.BytesIO(picture)).size == (600, 600)
