"""Scoring off the critical path: finished rows are rendered during generation and the reward finds them ready.

A real `generate` of the taught tiny policy feeds the streamer; a real training step with the composite reward
and Chromium shows the reward's renders were all made by the prefetches, with the same rewards as a step
that renders after generation."""

from __future__ import annotations

import os

import pytest
import torch
from models import tiny_sketcher, tiny_smoke_overrides

from watercolour.config import load_config
from watercolour.early_scoring import FinishedRows
from watercolour.rollout_store import RolloutStore


GENERATIONS = 4


def test_each_row_is_handed_over_once_with_exactly_its_generated_tokens():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from watercolour.prompt import messages

    folder = tiny_sketcher()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    prompt = tokenizer.apply_chat_template(
        messages(), add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    finished: dict[int, list[int]] = {}

    def on_finished(row: int, ids: list[int]) -> None:
        assert row not in finished, "a row was handed over twice"
        finished[row] = list(ids)

    torch.manual_seed(0)
    streamer = FinishedRows({tokenizer.eos_token_id}, on_finished)
    out = model.generate(
        **prompt, do_sample=True, num_return_sequences=6, max_new_tokens=12, streamer=streamer, pad_token_id=0
    )
    completions = out[:, prompt["input_ids"].shape[1] :].tolist()
    assert sorted(finished) == list(range(6))
    for row, ids in enumerate(completions):
        if tokenizer.eos_token_id in ids:  # ended by its own EOS: up to and including it, no padding after
            expected = ids[: ids.index(tokenizer.eos_token_id) + 1]
        else:  # ran out of budget: every token
            expected = ids
        assert finished[row] == expected


def train_one_step(run_dir, early: bool):
    os.environ.setdefault("TRACKIO_DIR", str(run_dir / "trackio"))
    from watercolour.trainer import build_trainer, close_reward

    config = load_config("smoke", tiny_smoke_overrides(run_dir, 1, GENERATIONS, **{"training.early_scoring": early}))
    trainer = build_trainer(config, run_dir, echo=False)
    assert trainer.early_scoring is early
    reward = trainer.reward_funcs[0]
    prefetched: list[str] = []
    prefetch = reward.prefetch

    async def counting_prefetch(text):
        prefetched.append(text)
        await prefetch(text)

    reward.prefetch = counting_prefetch
    try:
        trainer.train()
        renderer = reward.engine.renderer
        counts = {"renders": renderer.renders, "hits": renderer.hits}
    finally:
        close_reward(trainer)
    rows = sorted(RolloutStore(run_dir, GENERATIONS).rows(), key=lambda row: row["index"])
    return prefetched, counts, rows


@pytest.mark.browser
@pytest.mark.slow
def test_the_reward_finds_every_render_made_during_generation_and_scores_the_same(tmp_path):
    prefetched, counts, rows = train_one_step(tmp_path / "early", early=True)
    assert sorted(prefetched) == sorted(row["completion"] for row in rows), "each completion prefetched once"
    admitted = [row for row in rows if row["passed"]]
    assert admitted, "the taught policy writes admissible sketches"
    # Every render happened in a prefetch; the reward's own gate only read them back (cache or in flight).
    assert counts["renders"] == len({row["sketch_hash"] for row in admitted})
    assert counts["hits"] >= len(admitted)

    _, later_counts, later_rows = train_one_step(tmp_path / "after", early=False)
    assert [row["completion"] for row in later_rows] == [row["completion"] for row in rows]
    assert [row["reward"] for row in later_rows] == [row["reward"] for row in rows]
    assert later_counts["hits"] < counts["hits"], "without prefetches the reward renders for itself"
