"""Scoring off the critical path: finished rows are scored during generation and the reward finds them ready.

A real `generate` of the taught tiny policy feeds the streamer; a real training step with the composite reward
and Chromium shows the reward's renders and service answers were all made by the prefetches, under the seed and
subject of each row, with the same rewards as a step that scores after generation."""

from __future__ import annotations

import contextvars
import json
import os
from dataclasses import replace

import pytest
import torch

from deployments.presets import load_config
from rewards.aesthetic import build_scorer
from rewards.judging.judge import build_judge
from rewards.scoring.composite import CompositeReward, group_seed
from rewards.scoring.scoring_engine import ScoringEngine
from tests.models import tiny_sketcher, tiny_smoke_overrides
from tests.scoring.counting import Counted, CountingFactory
from watercolour.policy.early_scoring import FinishedRows
from watercolour.policy.generation import TRL_PATH
from watercolour.run_records.curves import CurvesFile
from watercolour.run_records.rollout_store import RolloutStore


GENERATIONS = 4
# Two groups a step, one prompt with a subject column of its own each, neither the run's `training.subject`: each
# row's own subject must reach its prefetch (the offline stand-ins read it, so it is part of their cache keys).
SUBJECTS = ("a pale blue morning glory", "a red poppy")
# Set inside the reward's scoring: a service call made there (not joined from a prefetch) is the scoring's own.
SCORING = contextvars.ContextVar("scoring", default=False)


class Attributed(Counted):
    """A counted scorer or judge that also counts the calls the reward's scoring made itself."""

    def __init__(self, inner):
        super().__init__(inner)
        self.by_scoring = 0

    async def score(self, pngs, subjects=None):
        self.by_scoring += SCORING.get()
        return await super().score(pngs, subjects)

    async def judge(self, png, group_seed, subject=None):
        self.by_scoring += SCORING.get()
        return await super().judge(png, group_seed, subject)


class AttributingFactory(CountingFactory):
    def __call__(self, *args):
        self.built.append(Attributed(self.make(*args)))
        return self.built[-1]


def test_each_row_is_handed_over_once_with_exactly_its_generated_tokens():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ground.prompt import messages

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


def test_a_generate_call_over_other_rows_than_the_batch_hands_its_rows_over_alone():
    """TRL's tool loop generates again for a subset of the batch: those rows are not the batch's, so they go to the
    reward without a prompt or columns (rendered only), while the batch's own call hands each row its arguments."""
    from ground.prompt import messages
    from watercolour.policy.early_scoring import scoring_during_generation

    handed: list[dict] = []

    class Recording:
        async def prefetch(self, text, **arguments):
            handed.append(arguments)

    trainer, prompt_ids = stand_in_trainer(Recording())
    model, loop = trainer.model_wrapped, trainer.async_loop
    prompts = [messages(subject) for subject in SUBJECTS]
    with scoring_during_generation(trainer, prompts, [{"subject": subject} for subject in SUBJECTS]) as futures:
        for rows in (len(SUBJECTS), 1):  # the batch, then a subset of it
            model.generate(input_ids=prompt_ids.repeat(rows, 1), do_sample=True, max_new_tokens=4, pad_token_id=0)
    for future in futures:
        future.result(timeout=30)
    loop.call_soon_threadsafe(loop.stop)
    expected = [
        {"prompt": prompt, "trainer_state": trainer.state, "subject": subject}
        for prompt, subject in zip(prompts, SUBJECTS, strict=True)
    ]
    assert sorted((arguments for arguments in handed if arguments), key=lambda a: a["subject"]) == expected
    assert [arguments for arguments in handed if not arguments] == [{}]


def train_one_step(run_dir, early: bool):
    """One training step of the taught policy; what was prefetched (text and keyword arguments), the render
    counts, the service calls (all, and the reward's scoring's own), what the judge was asked, and the step's rows."""
    os.environ.setdefault("TRACKIO_DIR", str(run_dir / "trackio"))
    from watercolour.training.trainer import build_trainer, close_reward

    overrides = {"training.per_device_batch_size": len(SUBJECTS) * GENERATIONS}
    config = load_config("smoke", tiny_smoke_overrides(run_dir, 1, GENERATIONS, **overrides))
    clients = {"aesthetic": AttributingFactory(build_scorer), "judge": AttributingFactory(build_judge)}

    trainer = build_trainer(config, run_dir, echo=False, plan=replace(TRL_PATH, early_scoring=early))
    reward = trainer.reward_funcs[0]
    assert isinstance(reward, CompositeReward) and isinstance(reward.scorer, ScoringEngine)
    reward.scorer = ScoringEngine(config.scoring, run_dir, clients=clients)  # the same engine, its clients counted
    trainer.train_dataset = trainer.train_dataset.map(lambda _, index: {"subject": SUBJECTS[index]}, with_indices=True)
    assert trainer.early_scoring is early
    prefetched: list[tuple[str, dict]] = []
    prefetch, score = reward.prefetch, reward.scorer.score

    async def counting_prefetch(text, **kwargs):
        # The trainer state is TRL's live object: what matters is its step when the row was handed over.
        state = kwargs.get("trainer_state")
        prefetched.append((text, {**kwargs, "global_step": state.global_step if state is not None else None}))
        await prefetch(text, **kwargs)

    async def attributed_score(*args, **kwargs):
        SCORING.set(True)  # in this task's context only: the prefetches' calls run in their own
        return await score(*args, **kwargs)

    reward.prefetch, reward.scorer.score = counting_prefetch, attributed_score
    try:
        trainer.train()
        renderer = reward.scorer.renderer
        counts = {"renders": renderer.renders, "hits": renderer.hits}
    finally:
        close_reward(trainer)
    rows = sorted(RolloutStore(run_dir, GENERATIONS).rows(), key=lambda row: row["index"])
    calls = {name: (factory.calls, factory.built[0].by_scoring) for name, factory in clients.items()}
    judges = clients["judge"].built[0]
    asked = {"seeds": set(judges.seeds), "subjects": sorted(judges.subjects)}
    (curve,) = CurvesFile(run_dir).read()
    return prefetched, counts, calls, asked, rows, curve


@pytest.mark.browser
@pytest.mark.slow
def test_the_reward_finds_every_render_and_answer_made_during_generation_and_scores_the_same(tmp_path):
    prefetched, counts, calls, asked, rows, curve = train_one_step(tmp_path / "early", early=True)
    assert {row["subject"] for row in rows} == set(SUBJECTS)
    # Each completion was prefetched once, with what the reward's call gets for its row: its prompt and subject.
    assert sorted((text, arguments.get("subject")) for text, arguments in prefetched) == sorted(
        (row["completion"], row["subject"]) for row in rows
    )
    prompt = prefetched[0][1]["prompt"]
    assert json.dumps(prompt) == rows[0]["prompt"]
    assert all(arguments["prompt"] == prompt and arguments["global_step"] == 0 for _, arguments in prefetched)
    admitted = [row for row in rows if row["passed"]]
    assert admitted, "the taught policy writes admissible sketches"
    # Every render happened in a prefetch; the reward's own gate only read them back (cache or in flight).
    assert counts["renders"] == len({row["sketch_hash"] for row in admitted})
    assert counts["hits"] >= len(admitted)
    # So did every service answer, once per sketch and subject, under the step's group seed: the scoring found
    # each in the cache or joined its call, and asked nothing itself.
    answers = {(row["sketch_hash"], row["subject"]) for row in admitted}
    assert calls == {"aesthetic": (len(answers), 0), "judge": (len(answers), 0)}
    assert asked == {"seeds": {group_seed(prompt, 1)}, "subjects": sorted(subject for _, subject in answers)}

    # The reward's wait splits into the last painting still scoring ahead after generation and the call's own.
    assert 0 <= float(curve["ahead_tail_s"]) <= float(curve["score_s"])

    _, later_counts, later_calls, later_asked, later_rows, later_curve = train_one_step(
        tmp_path / "after", early=False
    )
    assert [row["completion"] for row in later_rows] == [row["completion"] for row in rows]
    assert [row["reward"] for row in later_rows] == [row["reward"] for row in rows]
    assert later_counts["hits"] < counts["hits"], "without prefetches the reward renders for itself"
    # Scored after generation, the batch asks for itself: one batched aesthetic call, one judge call a rollout.
    assert later_calls == {"aesthetic": (1, 1), "judge": (len(admitted), len(admitted))}
    assert set(later_asked["subjects"]) == set(asked["subjects"])
    assert later_curve["ahead_tail_s"] == "", "nothing was scored ahead"


def test_the_gil_goes_back_to_the_decoding_thread_sooner_only_while_a_batch_generates():
    """Scoring threads run Python while the batch decodes; during `generate` (and only then) the interpreter's switch
    interval is DECODE_SWITCH_INTERVAL_S, so a decode step waits at most that long for the GIL, and it is the old
    interval again afterwards, also when `generate` fails."""
    import sys

    from transformers import LogitsProcessor, LogitsProcessorList

    from watercolour.policy.early_scoring import DECODE_SWITCH_INTERVAL_S, scoring_during_generation

    seen: list[float] = []

    class Interval(LogitsProcessor):
        def __call__(self, input_ids, scores):
            seen.append(sys.getswitchinterval())
            return scores

    class Failing(LogitsProcessor):
        def __call__(self, input_ids, scores):
            raise RuntimeError("CUDA out of memory (a stand-in for a failed generate)")

    class Recording:
        async def prefetch(self, text, **arguments):
            pass

    trainer, prompt_ids = stand_in_trainer(Recording())
    model, loop = trainer.model_wrapped, trainer.async_loop
    before = sys.getswitchinterval()
    assert before > DECODE_SWITCH_INTERVAL_S
    generate = dict(input_ids=prompt_ids, do_sample=True, min_new_tokens=3, max_new_tokens=3, pad_token_id=0)
    try:
        with scoring_during_generation(trainer) as futures:
            model.generate(**generate, logits_processor=LogitsProcessorList([Interval()]))
            assert sys.getswitchinterval() == before
            with pytest.raises(RuntimeError, match="out of memory"):
                model.generate(**generate, logits_processor=LogitsProcessorList([Interval(), Failing()]))
            assert sys.getswitchinterval() == before
        model.generate(**generate, logits_processor=LogitsProcessorList([Interval()]))  # no longer scoring early
        for future in futures:
            future.result(timeout=30)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        sys.setswitchinterval(before)
    assert seen == [DECODE_SWITCH_INTERVAL_S] * 4 + [before] * 3


def stand_in_trainer(reward):
    """What `scoring_during_generation` reads of a trainer: the tiny sketcher as its policy, `reward` as its only
    reward, an event loop running in a thread; and one prompt's ids to generate from."""
    import asyncio
    import threading
    from types import SimpleNamespace

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ground.prompt import messages

    folder = tiny_sketcher()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    trainer = SimpleNamespace(
        reward_funcs=[reward],
        accelerator=SimpleNamespace(unwrap_model=lambda wrapped: wrapped),
        model_wrapped=model,
        processing_class=tokenizer,
        eos_token_ids=[tokenizer.eos_token_id],
        async_loop=loop,
        state=SimpleNamespace(global_step=0),
    )
    prompt_ids = tokenizer.apply_chat_template(
        messages(), add_generation_prompt=True, return_tensors="pt", return_dict=True
    )["input_ids"]
    return trainer, prompt_ids


def test_a_completion_scored_ahead_of_a_later_batch_counts_as_ahead_in_that_batch():
    """Pipelined rollouts score ahead rows of the next steps' batches: a call leaves their texts for those batches."""
    import asyncio

    from transformers import TrainerState

    from ground.records import RewardParts

    class Answering:  # the scorer's three calls, every text answered alike
        async def score(self, texts, seeds, step, subjects):
            return [RewardParts(reward=0.5) for _ in texts]

        async def prefetch(self, text, **arguments):
            pass

        async def aclose(self):
            pass

    reward, shares = CompositeReward(Answering()), []

    async def two_steps() -> None:
        for step, text in enumerate(("this step's", "the next step's")):
            await reward.prefetch(text, "prompt", trainer_state=TrainerState(global_step=step))
        for step, text in enumerate(("this step's", "the next step's")):
            metrics: dict[str, float] = {}
            await reward(
                ["prompt"], [text], trainer_state=TrainerState(global_step=step), log_metric=metrics.__setitem__
            )
            shares.append(metrics["scoring/prefetched"])

    asyncio.run(two_steps())
    assert shares == [1.0, 1.0]
