"""Repaint GRPO end to end on CPU through TRL's environment_factory: a tiny policy taught to call `paint`, the real
scoring engine and Chromium, two steps; every turn recorded, the gallery showing episodes turn by turn."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deployments.presets import load_config
from ground.records import rollout_step
from tests.models import tiny_painter
from watercolour.run_records.rollout_store import RolloutStore


STEPS = 2
GENERATIONS = 4

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("repaint-run")
    os.environ.setdefault("TRACKIO_DIR", str(run_dir / "trackio"))
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from watercolour.training.trainer import build_trainer, close_reward

    config = load_config(
        "repaint",
        {
            "run_dir": str(run_dir),
            "training.model": str(tiny_painter()),
            "training.steps": STEPS,
            "training.num_generations": GENERATIONS,
            "training.per_device_batch_size": GENERATIONS,
            "training.gradient_accumulation_steps": 1,
            # Each taught call is a few tokens; the observations are spelled byte by byte by the tiny tokenizer.
            "training.max_completion_length": 1536,
            "training.learning_rate": 1e-2,
            "repaint.warm_start_examples": 0,
            "render.browsers": 1,
        },
    )
    steps: list[tuple[int, list]] = []

    def step_hook(config, run_dir, then):
        # What the Prefect flow hangs its step artifacts and fail_at_step on: called once the step is recorded.
        return lambda prompts, completions, parts, kwargs: steps.append((rollout_step(kwargs["trainer_state"]), parts))

    trainer = build_trainer(config, run_dir, echo=False, step_hook=step_hook)
    trainer.steps_seen = steps
    # The real prefetch and the real engine's score, recording what each was handed
    # (`watercolour.training.paint_ahead`): the episodes' `paint` scores through the same engine.
    prefetch, trainer.prefetched = trainer.paint_ahead, []
    engine = prefetch.__self__
    score, trainer.painted = engine.score, []

    async def recording_prefetch(sketch, **kwargs):
        trainer.prefetched.append((sketch, kwargs.get("seed")))
        await prefetch(sketch, **kwargs)

    async def recording_score(completions, seeds, *args, **kwargs):
        trainer.painted.extend(zip(completions, seeds, strict=True))
        return await score(completions, seeds, *args, **kwargs)

    trainer.paint_ahead = recording_prefetch
    engine.score = recording_score
    initial = {name: tensor.detach().clone() for name, tensor in trainer.model.named_parameters() if "lora_" in name}
    try:
        trainer.train()
    finally:
        close_reward(trainer)
        trainer.paint_ahead = None  # the engine is closed: later generate calls in tests render nothing ahead
    return trainer, initial, config, run_dir


def test_repaint_training_moves_the_lora_weights(trained):
    trainer, initial, _, _ = trained
    final = {name: tensor.detach() for name, tensor in trainer.model.named_parameters() if "lora_" in name}
    assert any(not final[name].equal(initial[name]) for name in final), "no LoRA parameter moved"


def test_every_turn_of_every_episode_is_recorded_with_its_observation(trained):
    _, _, config, run_dir = trained
    rows = RolloutStore(run_dir, GENERATIONS).rows()
    assert {row["step"] for row in rows} == {1, 2}
    episodes = {(row["step"], row["group"], row["index"]) for row in rows}
    assert len(episodes) == STEPS * GENERATIONS
    turns = [row for row in rows if row["turn"] is not None]
    assert turns, "no episode painted"
    assert max(row["turn"] for row in turns) == 2, "no episode painted twice"
    for row in turns:
        assert row["observation"].startswith(f"Painting {row['turn']} of 2.")
        assert row["sketch"] and row["episode_reward"] is not None
        if row["png"] is not None:
            assert (run_dir / row["png"]).read_bytes().startswith(b"\x89PNG")
    # The episode's reward is its last painting's (the preset's 'final' reward).
    for episode in episodes:
        painted = sorted((row for row in turns if (row["step"], row["group"], row["index"]) == episode), key=turn_of)
        if painted:
            assert painted[-1]["episode_reward"] == painted[-1]["reward"]


def test_the_gallery_shows_an_episode_as_its_turns_side_by_side(trained):
    from watercolour.run_records.gallery import write_gallery
    from watercolour.run_records.rollout_store import gallery_items

    _, _, _, run_dir = trained
    items = gallery_items(RolloutStore(run_dir, GENERATIONS).rows(), run_dir / "gallery", run_dir)
    assert len(items) == STEPS * GENERATIONS  # one card per episode
    repainted = [item for item in items if len(item.turns) == 2]
    assert repainted and [turn.title for turn in repainted[0].turns] == ["turn 1", "turn 2"]
    page = write_gallery(items, run_dir / "gallery", "repaint").read_text()
    data = json.loads(page.split('type="application/json">')[1].split("</script>")[0])
    assert any(len(item["turns"]) == 2 for item in data)


def turn_of(row: dict) -> int:
    return int(row["turn"])


def test_the_run_config_names_the_repaint_settings(trained):
    _, _, config, _ = trained
    assert config.repaint is not None and config.repaint.turns == 2 and config.repaint.reward == "final"
    assert Path(config.run_dir).is_dir()


def test_the_step_hook_sees_every_step_with_each_episodes_final_painting(trained):
    trainer, _, _, run_dir = trained
    steps = trainer.steps_seen
    assert [step for step, _ in steps] == [1, 2]
    rows = RolloutStore(run_dir, GENERATIONS).rows()
    for number, (_, parts) in enumerate(steps, start=1):
        assert len(parts) == GENERATIONS
        finals = {}
        for row in rows:
            if row["step"] == number:
                finals[row["group"], row["index"]] = row  # in turn order: an episode's last row is its final
        assert [part.reward for part in parts] == [finals[episode]["reward"] for episode in sorted(finals)]


def test_a_repaint_run_refuses_several_processes():
    from watercolour.training.distributed import RepaintInOneProcess, refuse_repaint_in_processes

    config = load_config("repaint", {})
    refuse_repaint_in_processes(config, 1)
    refuse_repaint_in_processes(load_config("smoke", {}), 2)
    with pytest.raises(RepaintInOneProcess, match="one process"):
        refuse_repaint_in_processes(config, 2)


def test_a_turn_after_an_observation_generates_no_more_than_the_episode_has_left(trained):
    import torch

    trainer = trained[0]
    trainer.args.report_to = []  # TRL times each generate call to the trackers; the run's trackio session has ended
    budget = trainer.generation_config.max_new_tokens
    prompt = trainer._tokenizer.apply_chat_template(
        [{"role": "user", "content": "Paint a poppy."}], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    # An episode whose prompt was `prompt` and whose first painting and observation already used the whole budget.
    spent = prompt + [trainer._tokenizer.pad_token_id] * budget + prompt
    trainer._longest_prompt = len(prompt)
    torch.manual_seed(0)
    free, _ = trainer._generate_single_turn([prompt], None, {}, 1)
    trainer._in_tool_loop = True
    try:
        capped, _ = trainer._generate_single_turn([spent], None, {}, 1)
    finally:
        trainer._in_tool_loop = False
    assert len(free[0]) > 1  # the policy says more than one token when it may
    assert len(capped[0]) == 1  # TRL would cut anything past the budget; it is not generated at all
    assert trainer.generation_config.max_new_tokens == budget


def test_no_turn_generates_more_than_repaint_turn_tokens(trained):
    import torch

    trainer = trained[0]
    trainer.args.report_to = []
    budget = trainer.generation_config.max_new_tokens
    prompt = trainer._tokenizer.apply_chat_template(
        [{"role": "user", "content": "Paint a poppy."}], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    # No end of sequence in the first 8 tokens, so the free reply runs past the cap whatever the tiny policy learned.
    trainer.generation_config.min_new_tokens = 8
    try:
        torch.manual_seed(0)
        free, _ = trainer._generate_single_turn([prompt], None, {}, 1)
        trainer.turn_tokens = 3
        torch.manual_seed(0)
        capped, _ = trainer._generate_single_turn([prompt], None, {}, 1)
    finally:
        trainer.turn_tokens = None
        trainer.generation_config.min_new_tokens = None
    assert len(free[0]) > 3
    assert capped[0] == free[0][:3]  # the same reply, cut where the turn's budget ends
    assert trainer.generation_config.max_new_tokens == budget


def test_every_painting_was_rendered_ahead_of_its_paint_call(trained):
    from rewards.gate import static_check

    trainer, _, config, run_dir = trained
    ahead = {static_check(text, settings=config.gate).sketch_hash for text, _ in trainer.prefetched}
    painted = {row["sketch_hash"] for row in RolloutStore(run_dir, GENERATIONS).rows() if row["png"] is not None}
    assert painted, "no episode's painting was rendered"
    # Each turn's paint calls started rendering together when the turn was generated; TRL's one-by-one `paint`
    # calls then joined those renders (a painting missing here was rendered by its own call, after the others).
    assert painted <= ahead


def test_each_paint_call_was_answered_ahead_under_its_episodes_seed(trained):
    trainer = trained[0]
    assert trainer.painted, "no episode called paint"
    # Every (sketch, group seed) an episode's `paint` scored was prefetched with that seed, so its service answers
    # (the offline aesthetic and judge here) were asked for as soon as the turn was generated, under the cache key
    # `paint` then looks up.
    assert set(trainer.painted) <= set(trainer.prefetched)
    assert all(seed is not None for _, seed in trainer.prefetched)


def test_a_turns_rows_are_told_their_episodes_seed_from_the_batch_prompts():
    from rewards.scoring.composite import group_seed
    from watercolour.training.paint_ahead import episode_seeds

    batch_ids = [[1, 2, 3], [1, 2, 3], [1, 2, 4, 5]]
    prompts = ["poppy", "poppy", "iris"]
    rows = [[1, 2, 3, 9, 9], [1, 2, 4, 5, 7], [8, 8]]  # continues poppy; continues iris; continues nothing
    assert episode_seeds(rows, batch_ids, prompts, 3) == [group_seed("poppy", 3), group_seed("iris", 3), None]


def test_a_paint_call_is_read_from_a_reply_as_trl_parses_it(trained):
    from trl.chat_template_utils import parse_response

    from watercolour.training.paint_ahead import paint_calls

    tokenizer = trained[0]._tokenizer
    prompt = [{"role": "user", "content": "Paint a poppy."}]
    call = {"type": "function", "function": {"name": "paint", "arguments": {"sketch": "function draw() {}"}}}
    reply = [{"role": "assistant", "content": "", "tool_calls": [call]}]
    before = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=False)
    whole = tokenizer.apply_chat_template(prompt + reply, tokenize=True, return_dict=False)
    assert whole[: len(before)] == before
    parsed = parse_response(tokenizer, whole[len(before) :], prefix=before)
    assert paint_calls(parsed) == ["function draw() {}"]
    assert paint_calls({"role": "assistant", "content": "Done."}) == []
    other = {"type": "function", "function": {"name": "erase", "arguments": {"sketch": "x"}}}
    assert paint_calls({"role": "assistant", "tool_calls": [other]}) == []
