"""Scoring one painting ahead of its batch (`ScoringEngine.prefetch`, `CompositeReward.prefetch`): the service
terms are answered into the cache under the key `score` will look up, a failure is left for `score` to record,
a `score` joins a call still in flight, and a term whose answer depends on the batch waits for the batch.

The services are the real HTTP clients against loopback servers (an HPSv3-speaking scorer, an OpenAI-compatible
judge), or the offline stand-ins, on real Chromium renders.
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deployments.presets import load_config
from ground.run_config import RunConfig
from rewards.aesthetic import build_scorer, hps_score
from rewards.judging.judge import build_judge
from rewards.scoring.composite import CompositeReward, group_seed
from rewards.scoring.dead_letters import DeadLetterLog
from rewards.scoring.scoring_engine import ScoringEngine
from tests.scoring.counting import CountingFactory, StepState, fenced
from tests.servers.loopback import Handler, LoopbackServer, Reply, Request, failing_first
from tests.servers.openai_compat import openai_compat_server, verdict


pytestmark = pytest.mark.browser

SEED = 4242
# Not the run's `training.subject`: a prefetch that dropped the subject would answer the offline stand-ins under
# another key.
SUBJECT = "a pale blue morning glory"


def scores_by_size(request: Request) -> Reply:
    """An HPSv3-speaking scorer whose mu follows the encoded image's size: deterministic, and different per picture."""
    mus = [len(base64.b64decode(image)) % 997 / 100 for image in request.body["images"]]
    return Reply(200, {"scores": [{"mu": mu, "sigma": 1.0, "score": hps_score(mu)} for mu in mus], "model": "fake"})


def larger_wins(a: bytes, b: bytes) -> str:
    return verdict("A" if len(a) > len(b) else "B")


def engine_for(run_dir: Path, browser_pool: Any, **overrides: Any) -> tuple[ScoringEngine, dict[str, CountingFactory]]:
    """An engine over `run_dir` whose service clients count their calls."""
    config = load_config("offline", {"run_dir": str(run_dir), **overrides})
    clients = {"aesthetic": CountingFactory(build_scorer), "judge": CountingFactory(build_judge)}
    return ScoringEngine(config.scoring, run_dir, browsers=browser_pool, clients=clients), clients


def calls(clients: dict[str, CountingFactory]) -> dict[str, int]:
    return {name: factory.calls for name, factory in clients.items()}


def over_http(scorer: LoopbackServer, judge: LoopbackServer) -> dict[str, Any]:
    return {
        "aesthetic.backend": "hpsv3",
        "aesthetic.url": scorer.url,
        "judge.backend": "openai",
        "judge.base_url": judge.url + "/v1",
        "judge.backoff_s": 0,
    }


@pytest.mark.parametrize("backends", ["offline", "http"])
async def test_after_a_prefetch_score_calls_no_service_and_gives_the_parts_of_a_cold_score(
    tmp_path: Path, browser_pool, flower_sketch: str, backends: str
) -> None:
    painting = fenced(flower_sketch)
    with LoopbackServer(scores_by_size) as scorer, openai_compat_server(larger_wins) as judge:
        overrides = over_http(scorer, judge) if backends == "http" else {}
        engine, clients = engine_for(tmp_path / "ahead", browser_pool, **overrides)
        await engine.prefetch(painting, seed=SEED, subject=SUBJECT)
        asked = calls(clients)
        requests = (len(scorer.requests), len(judge.requests))
        assert asked == {"aesthetic": 1, "judge": 1}
        (ahead,) = await engine.score([painting], [SEED], step=3, subjects=[SUBJECT])
        assert calls(clients) == asked and (len(scorer.requests), len(judge.requests)) == requests

        cold_engine, cold_clients = engine_for(tmp_path / "cold", browser_pool, **overrides)
        (cold,) = await cold_engine.score([painting], [SEED], step=3, subjects=[SUBJECT])
        await engine.aclose()
        await cold_engine.aclose()
    assert calls(cold_clients) == {"aesthetic": 1, "judge": 1}
    if backends == "http":
        assert requests == (1, 2 * 4)  # one scoring request; four references, both orders
    assert ahead.reward is not None and ahead.dead_letter is None
    assert (ahead.reward, ahead.terms, ahead.details) == (cold.reward, cold.terms, cold.details)
    assert ahead.backends == cold.backends


def held_until(release: threading.Event, handle: Handler) -> Handler:
    """`handle`, answered only once `release` is set: a service call that stays in flight while the test acts."""

    def held(request: Request) -> Reply:
        release.wait(30)
        return handle(request)

    return held


def scorer_overrides(server: LoopbackServer, attempts: int) -> dict[str, Any]:
    # The judge stays the offline stand-in: only the scorer's calls are under test.
    return {
        "aesthetic.backend": "hpsv3",
        "aesthetic.url": server.url,
        "aesthetic.attempts": attempts,
        "aesthetic.backoff_s": 0,
    }


@pytest.mark.parametrize(("failures", "dead_letters"), [(2, 0), (1000, 1)])
async def test_a_failed_prefetch_records_nothing_and_score_meets_the_service_again(
    tmp_path: Path, browser_pool, flower_sketch: str, failures: int, dead_letters: int
) -> None:
    painting = fenced(flower_sketch)
    with LoopbackServer(failing_first(failures, Reply(503, {"error": "busy"}), scores_by_size)) as server:
        engine, _ = engine_for(tmp_path, browser_pool, **scorer_overrides(server, attempts=2))
        await engine.prefetch(painting, seed=SEED)
        assert len(server.requests) == 2  # both attempts of the prefetch's call failed
        assert DeadLetterLog(tmp_path).read() == []
        (parts,) = await engine.score([painting], [SEED], step=5)
        await engine.aclose()
    letters = DeadLetterLog(tmp_path).read()
    assert len(letters) == dead_letters
    if dead_letters:
        assert len(server.requests) == 4 and parts.reward is None
        assert (letters[0].stage, letters[0].step, letters[0].attempts) == ("aesthetic", 5, 2)
    else:
        assert len(server.requests) == 3 and parts.term("aesthetic") is not None and parts.reward is not None


async def until(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    for _ in range(int(timeout_s / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out")


@pytest.mark.parametrize("prefetch_fails", [False, True])
async def test_a_score_that_starts_while_the_prefetch_call_is_in_flight_joins_it(
    tmp_path: Path, browser_pool, flower_sketch: str, prefetch_fails: bool
) -> None:
    painting = fenced(flower_sketch)
    release = threading.Event()
    handle = failing_first(1 if prefetch_fails else 0, Reply(503, {"error": "busy"}), scores_by_size)
    with LoopbackServer(held_until(release, handle)) as server:
        engine, _ = engine_for(tmp_path, browser_pool, **scorer_overrides(server, attempts=1))
        prefetch = asyncio.ensure_future(engine.prefetch(painting, seed=SEED))
        await until(lambda: len(server.requests) == 1)
        score = asyncio.ensure_future(engine.score([painting], [SEED], step=2))
        await asyncio.sleep(1.0)  # the score's gate reads the render from the cache in milliseconds
        assert not score.done() and len(server.requests) == 1, "the score asked the scorer itself"
        release.set()
        await prefetch
        (parts,) = await score
        await engine.aclose()
    # A failed prefetch leaves the answer to the score's own call, which is answered and records nothing.
    assert len(server.requests) == (2 if prefetch_fails else 1)
    assert parts.term("aesthetic") is not None and parts.reward is not None
    assert DeadLetterLog(tmp_path).read() == []


@pytest.mark.parametrize("score_fails", [False, True])
async def test_a_prefetch_that_starts_while_a_scores_call_is_in_flight_leaves_it_be(
    tmp_path: Path, browser_pool, flower_sketch: str, score_fails: bool
) -> None:
    painting = fenced(flower_sketch)
    release = threading.Event()
    handle = failing_first(1 if score_fails else 0, Reply(503, {"error": "busy"}), scores_by_size)
    with LoopbackServer(held_until(release, handle)) as server:
        engine, _ = engine_for(tmp_path, browser_pool, **scorer_overrides(server, attempts=1))
        score = asyncio.ensure_future(engine.score([painting], [SEED], step=2))
        await until(lambda: len(server.requests) == 1)
        prefetch = asyncio.ensure_future(engine.prefetch(painting, seed=SEED))
        await asyncio.sleep(1.0)  # the prefetch's gate reads the render from the cache in milliseconds
        assert prefetch.done() and len(server.requests) == 1, "the prefetch asked the scorer itself"
        release.set()
        (parts,) = await score
        await engine.aclose()
    assert len(server.requests) == 1
    # The score's own call records its failure; the prefetch, having asked nothing, records nothing.
    assert len(DeadLetterLog(tmp_path).read()) == (1 if score_fails else 0)
    assert (parts.reward is None) == score_fails


async def test_the_judge_in_group_mode_is_left_for_the_batch(tmp_path: Path, browser_pool, flower_sketch: str) -> None:
    paintings = [fenced(flower_sketch.replace("#f28c6a", colour)) for colour in ("#f28c6a", "#6a8cf2")]
    config = load_config("offline", {"run_dir": str(tmp_path), "judge.mode": "group"})
    # The judge is the real group judge, unwrapped: the engine tells its mode by its type.
    scorers = CountingFactory(build_scorer)
    engine = ScoringEngine(config.scoring, tmp_path, browsers=browser_pool, clients={"aesthetic": scorers})
    for painting in paintings:
        await engine.prefetch(painting, seed=SEED)
    answered = tmp_path / "cache" / "terms"
    assert len(list((answered / "aesthetic").glob("*.json"))) == 2 and scorers.calls == 2
    assert not (answered / "judge").exists(), "a painting's rank depends on its groupmates: only the batch knows them"
    parts = await engine.score(paintings, [SEED, SEED], step=1)
    await engine.aclose()
    assert scorers.calls == 2 and len(list((answered / "judge").glob("*.json"))) == 2
    assert sum(part.term("judge") or 0.0 for part in parts) == pytest.approx(1.0)  # one pair, one win to share


def reward_for(run_dir: Path, browser_pool: Any) -> tuple[CompositeReward, dict[str, CountingFactory]]:
    config: RunConfig = load_config("offline", {"run_dir": str(run_dir)})
    clients = {"aesthetic": CountingFactory(build_scorer), "judge": CountingFactory(build_judge)}
    return CompositeReward(ScoringEngine(config.scoring, run_dir, browsers=browser_pool, clients=clients)), clients


async def test_the_rewards_prefetch_scores_under_the_seed_and_subject_its_call_derives(
    tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    paintings = [fenced(flower_sketch.replace("#f28c6a", colour)) for colour in ("#f28c6a", "#6a8cf2")]
    prompts = ["paint a peach hibiscus", "paint a pale blue morning glory"]
    subjects = ["a peach hibiscus", SUBJECT]
    reward, clients = reward_for(tmp_path, browser_pool)
    state = StepState(6)
    for prompt, painting, subject in zip(prompts, paintings, subjects, strict=True):
        await reward.prefetch(painting, prompt=prompt, trainer_state=state, subject=subject)
    asked = calls(clients)
    assert asked == {"aesthetic": 2, "judge": 2}
    assert clients["judge"].built[0].seeds == [group_seed(prompt, 7) for prompt in prompts]
    assert clients["judge"].built[0].subjects == subjects
    rewards = await reward(prompts, paintings, trainer_state=state, subject=subjects)
    await reward.aclose()
    assert calls(clients) == asked
    assert all(value is not None and value > 0 for value in rewards)


async def test_without_a_prompt_the_rewards_prefetch_only_renders(tmp_path: Path, browser_pool, flower_sketch) -> None:
    reward, clients = reward_for(tmp_path, browser_pool)
    await reward.prefetch(fenced(flower_sketch))
    assert calls(clients) == {"aesthetic": 0, "judge": 0} and reward.scorer.renderer.renders == 1
    await reward.aclose()
