"""The composite reward, end to end on the real renderer and the real offline backends.

Service clients are wrapped in a small counting class (the scorer and judge protocols are two methods), so a
test can say how often each was called; unreachable services are the real HTTP clients pointed at a closed port.
"""

from __future__ import annotations

import asyncio
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from deployments.presets import load_config
from ground.records import RenderResult, RewardParts, sketch_hash
from ground.reference_pool import load_pool
from ground.run_config import RunConfig
from rewards.aesthetic import aesthetic_settings, build_scorer, make_scorer
from rewards.judging.judge import build_judge, judge_settings, make_judge
from rewards.length import length_score
from rewards.scoring.composite import CompositeReward, group_seed
from rewards.scoring.dead_letters import DeadLetterLog
from rewards.scoring.scoring_engine import ScoringEngine
from tests.scoring.counting import CountingFactory, StepState, fenced


pytestmark = pytest.mark.browser

# Nothing listens on the discard port, so a client aimed there fails like a service that is down.
CLOSED_PORT = "http://127.0.0.1:9"


class StuckRenderer:
    """A renderer that never answers, like a pool whose browsers hang."""

    async def render(self, source: str, seed: int = 0) -> RenderResult:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def config_for(run_dir: Path, **overrides: Any) -> RunConfig:
    return load_config("offline", {"run_dir": str(run_dir), "render.browsers": 1, **overrides})


def reward_for(
    config: RunConfig, browser_pool: Any, **kwargs: Any
) -> tuple[CompositeReward, CountingFactory, CountingFactory]:
    scorers, judges = CountingFactory(build_scorer), CountingFactory(build_judge)
    clients = {"aesthetic": scorers, "judge": judges}
    reward = CompositeReward(
        ScoringEngine(config.scoring, config.run_dir, browsers=browser_pool, clients=clients), **kwargs
    )
    return reward, scorers, judges


@pytest.fixture
def paintings(flower_sketch: str) -> list[str]:
    """Three different passing sketches: the test flower in three petal colours."""
    return [fenced(flower_sketch.replace("#f28c6a", colour)) for colour in ("#f28c6a", "#6a8cf2", "#8cf26a")]


NOT_A_SKETCH = "I would rather not paint today."
OUTSIDE_ALLOWLIST = fenced("function setup() { createCanvas(600, 600, WEBGL); brush.line(0, 0, 9, 9); }")


async def test_gate_failures_score_zero_with_no_render_and_no_service_call(tmp_path: Path, browser_pool) -> None:
    reward, scorers, judges = reward_for(config_for(tmp_path), browser_pool)
    rewards = await reward(["p", "p"], [NOT_A_SKETCH, OUTSIDE_ALLOWLIST])
    assert rewards == [0.0, 0.0]
    assert reward.scorer.renderer.renders == 0 and scorers.calls == 0 and judges.calls == 0
    assert not (tmp_path / "dead_letters.jsonl").exists()


async def test_a_passing_sketch_scores_the_weighted_sum_of_its_parts(
    tmp_path: Path, browser_pool, paintings: list[str], flower_sketch: str
) -> None:
    config = config_for(tmp_path)
    scored: list[list[RewardParts]] = []
    logged: dict[str, float] = {}
    reward, _, _ = reward_for(
        config, browser_pool, on_scored=lambda prompts, completions, parts, kw: scored.append(parts)
    )
    rewards = await reward(
        ["paint", "paint"], [paintings[0], NOT_A_SKETCH], trainer_state=StepState(3), log_metric=logged.__setitem__
    )
    parts = scored[0][0]
    assert parts.verdict is not None and parts.verdict.render is not None and parts.verdict.render.png is not None
    png = parts.verdict.render.png
    # The same picture through the offline backends directly, with the group seed of step 3's rollouts (step 4) and,
    # with no `subject` column given, the run's subject.
    subject = config.training.subject
    aesthetic = (await make_scorer(aesthetic_settings(config)).score([png], [subject]))[0].score
    judge = (await make_judge(judge_settings(config), load_pool()).judge(png, group_seed("paint", 4), subject)).score
    length = length_score(flower_sketch.strip())
    assert judge is not None and 0 < length < 1
    assert rewards[0] == pytest.approx(0.05 + 0.05 * length + 0.30 * aesthetic + 0.60 * judge)
    assert rewards[1] == 0.0
    assert [parts.term(name) for name in ("gate", "length", "aesthetic", "judge")] == [1.0, length, aesthetic, judge]
    assert parts.backends["aesthetic"].startswith("offline") and parts.backends["judge"].startswith("offline")
    assert set(parts.timings_ms) == {"gate", "aesthetic", "judge"}
    assert logged["reward/gate"] == 0.5 and logged["dead_letters"] == 0.0
    assert logged["reward/aesthetic"] == pytest.approx(aesthetic) and logged["reward/judge"] == pytest.approx(judge)


async def test_an_unreachable_scorer_gives_none_and_a_dead_letter(
    tmp_path: Path, browser_pool, paintings: list[str], flower_sketch: str
) -> None:
    unreachable = {"aesthetic.backend": "hpsv3", "aesthetic.url": CLOSED_PORT, "aesthetic.attempts": 2}
    config = config_for(tmp_path, **unreachable, **{"aesthetic.backoff_s": 0})
    reward, _, judges = reward_for(config, browser_pool)
    logged: dict[str, float] = {}
    rewards = await reward(
        ["p", "p"], [paintings[0], NOT_A_SKETCH], trainer_state=StepState(5), log_metric=logged.__setitem__
    )
    assert rewards == [None, 0.0]  # the gate failure is still a genuine zero
    letters = [json.loads(line) for line in (tmp_path / "dead_letters.jsonl").read_text().splitlines()]
    assert len(letters) == 1
    letter = letters[0]
    assert (letter["stage"], letter["attempts"], letter["step"]) == ("aesthetic", 2, 6)
    assert letter["sketch_hash"] == sketch_hash(flower_sketch.strip())
    assert letter["cause"] and letter["at"] > 0
    assert logged["dead_letters"] == 1.0
    assert judges.calls == 1  # the judge is independent of the scorer's outage


async def test_the_subject_column_reaches_both_stand_ins_and_the_cache_tells_subjects_apart(
    tmp_path: Path, browser_pool, paintings: list[str]
) -> None:
    reward, scorers, judges = reward_for(config_for(tmp_path), browser_pool)
    # The test flower's petals are #f28c6a, a peach; TRL passes the dataset's `subject` column as a keyword.
    peach = await reward(["paint"], [paintings[0]], subject=["a peach hibiscus"], trainer_state=StepState(0))
    blue = await reward(["paint"], [paintings[0]], subject=["a pale blue morning glory"], trainer_state=StepState(0))
    assert scorers.built[0].subjects == [["a peach hibiscus"], ["a pale blue morning glory"]]
    assert judges.built[0].subjects == ["a peach hibiscus", "a pale blue morning glory"]
    # Same sketch, same step: only the subject differs, and a cached answer for one is not reused for the other.
    assert peach[0] is not None and blue[0] is not None and peach[0] > blue[0] + 0.1
    await reward.aclose()


@pytest.mark.parametrize(
    ("off", "on", "unreachable"),
    [
        ("judge", "aesthetic", {"judge.backend": "openai", "judge.base_url": CLOSED_PORT}),
        ("aesthetic", "judge", {"aesthetic.backend": "hpsv3", "aesthetic.url": CLOSED_PORT}),
    ],
)
async def test_a_backend_at_weight_zero_is_never_called_and_the_other_still_is(
    tmp_path: Path, browser_pool, paintings: list[str], off: str, on: str, unreachable: dict[str, str]
) -> None:
    # The switched-off backend points at a dead endpoint: one call to it would be a dead letter and a None.
    config = config_for(tmp_path, **unreachable, **{f"weights.{off}": 0.0, f"weights.{on}": 0.9})
    scored: list[list[RewardParts]] = []
    reward, scorers, judges = reward_for(config, browser_pool, on_scored=lambda *args: scored.append(args[2]))
    rewards = await reward(["p", "p"], paintings[:2])
    factories = {"aesthetic": scorers, "judge": judges}
    assert factories[off].built == [] and factories[on].calls >= 1
    assert not (tmp_path / "dead_letters.jsonl").exists()
    for value, parts in zip(rewards, scored[0], strict=True):
        measured = parts.term(on)
        assert parts.term(off) is None and parts.backends[off] == "off (weight 0)"
        assert measured is not None and parts.term("length") is not None
        assert value == pytest.approx(0.05 + 0.05 * parts.term("length") + 0.9 * measured)


async def test_every_rollout_of_a_group_faces_the_same_references(
    tmp_path: Path, browser_pool, paintings: list[str]
) -> None:
    scored: list[list[RewardParts]] = []
    reward, _, judges = reward_for(config_for(tmp_path), browser_pool, on_scored=lambda *args: scored.append(args[2]))
    prompts = ["paint a peach hibiscus"] * 3 + ["paint a red poppy"] * 3
    await reward(prompts, paintings + paintings, trainer_state=StepState(7))
    verdicts = [parts.details["judge"] for parts in scored[0] if "judge" in parts.details]
    drawn = [[comparison["reference"] for comparison in verdict["comparisons"]] for verdict in verdicts]
    assert len(drawn) == 6
    assert drawn[0] == drawn[1] == drawn[2] and drawn[3] == drawn[4] == drawn[5]
    assert len(set(judges.built[0].seeds)) == 2  # one seed per group, different across groups
    assert group_seed(prompts[0], 8) != group_seed(prompts[0], 9)  # and a new draw at the next step

    # Without a trainer state, a `group_seed` column decides the draw.
    await reward(prompts[:3], paintings, group_seed=[11, 11, 11])
    assert judges.built[0].seeds[-3:] == [11, 11, 11]


async def test_the_reward_pickles_and_scores_after_unpickling(tmp_path: Path, paintings: list[str]) -> None:
    # No lent pool: the copy starts its own from the config, as it would in a process TRL or Prefect shipped it to.
    clone = pickle.loads(pickle.dumps(CompositeReward(ScoringEngine(config_for(tmp_path).scoring, tmp_path))))
    assert clone.__name__ == "watercolour_reward"
    as_chat = [[{"role": "user", "content": "paint"}, {"role": "assistant", "content": paintings[0]}]]

    async def on_another_loop() -> list[float | None]:
        try:
            return await clone(["p"], [paintings[1]])
        finally:
            await clone.aclose()

    # TRL runs async rewards on a loop of its own thread: the clients are built there, and again on a new loop.
    elsewhere = await asyncio.to_thread(asyncio.run, on_another_loop())
    try:
        rewards = await clone([[{"role": "user", "content": "paint"}]], as_chat)
        assert isinstance(rewards[0], float) and isinstance(elsewhere[0], float) and rewards[0] != elsewhere[0]
        after_use = pickle.loads(pickle.dumps(clone))  # live clients (browsers, HTTP) stay behind
        assert after_use.scorer._clients is None and after_use.scorer.settings == clone.scorer.settings
    finally:
        await clone.aclose()


async def test_a_second_call_on_the_same_completions_costs_nothing(
    tmp_path: Path, browser_pool, paintings: list[str]
) -> None:
    config = config_for(tmp_path)
    batch: dict[str, Any] = {
        "prompts": ["p"] * 4,
        "completions": [*paintings, NOT_A_SKETCH],
        "trainer_state": StepState(2),
    }
    reward, scorers, judges = reward_for(config, browser_pool)
    first = await reward(**batch)
    admitted = sum(value is not None and value > 0 for value in first)
    assert reward.scorer.renderer.renders == 3 and scorers.calls == 1 and judges.calls == admitted
    # A resumed run is a fresh reward over the same run directory; the repeat costs no render and no call.
    resumed, scorers, judges = reward_for(config, browser_pool)
    again = await resumed(**batch)
    assert again == first
    assert (resumed.scorer.renderer.renders, scorers.calls, judges.calls) == (0, 0, 0)
    assert resumed.scorer.renderer.hits == 3


async def test_a_stuck_renderer_gives_none_and_a_render_dead_letter(
    tmp_path: Path, paintings: list[str], flower_sketch: str
) -> None:
    reward, scorers, judges = reward_for(config_for(tmp_path, **{"gate.deadline_s": 0.2}), StuckRenderer())
    rewards = await reward(["p", "p"], [paintings[0], NOT_A_SKETCH], trainer_state=StepState(0))
    assert rewards == [None, 0.0]
    [letter] = DeadLetterLog(tmp_path).read()
    assert (letter.stage, letter.attempts, letter.step) == ("render", 2, 1)
    assert letter.sketch_hash == sketch_hash(flower_sketch.strip()) and "stuck" in letter.cause
    assert scorers.calls == 0 and judges.calls == 0


def test_dead_letters_of_replayed_steps_are_dropped_on_resume_and_a_torn_line_is_ignored(tmp_path):
    from rewards.scoring.dead_letters import dead_letter

    log = DeadLetterLog(tmp_path)
    for step in (1, 2, 3):
        log.append(dead_letter("aesthetic", RuntimeError("scorer gone"), f"hash{step}", step))
    with log.path.open("a") as handle:
        handle.write('{"stage": "judge", "cau')  # killed in the middle of an append
    assert [letter.step for letter in log.read()] == [1, 2, 3]
    log.truncate(after_step=2)
    assert [letter.step for letter in log.read()] == [1, 2]
    assert log.path.read_text().count("\n") == 2
