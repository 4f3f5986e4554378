"""The pairwise judge: seeded reference draws, the both-orders protocol, the OpenAI-compatible client, the stand-in."""

from __future__ import annotations

import asyncio
import pickle
from collections import Counter

import pytest

from ground.reference_pool import Reference
from rewards.errors import ServiceUnavailable
from rewards.judging.judge import make_judge
from rewards.judging.judge_protocol import draw_references
from rewards.judging.openai_judge import OpenAIJudge, parse_verdict, parse_winner
from rewards.judging.settings import JudgeSettings
from tests.servers.images import blank, flat_blob, layered_wash, solid, width_of
from tests.servers.loopback import Reply
from tests.servers.openai_compat import openai_compat_server, verdict


def rated(name: str, tier: str, png: bytes) -> Reference:
    return Reference(name=name, tier=tier, subject="a flower", sketch="", png=png, rated_by="test")


def pool(love: int = 5, okay: int = 5) -> list[Reference]:
    """References narrower than any rollout below, each a different width so a test can tell them apart."""
    widths = iter(range(40, 200, 8))
    return [
        rated(f"{tier}_{i}", tier, solid(next(widths)))
        for tier, n in (("love", love), ("okay", okay))
        for i in range(n)
    ]


FAST = {"attempts": 3, "backoff_s": 0.01, "timeout_s": 5.0}


def openai_judge(url: str, references: list[Reference] | None = None, **overrides) -> OpenAIJudge:
    settings = JudgeSettings(backend="openai", base_url=url + "/v1", **{**FAST, **overrides})
    judge = make_judge(settings, references or pool())
    assert isinstance(judge, OpenAIJudge)
    return judge


def wider_wins(a: bytes, b: bytes) -> str:
    return verdict("A" if width_of(a) > width_of(b) else "B")


# --- reference draws ---


def test_draw_is_seeded_and_half_love_half_okay():
    references = pool()
    drawn = draw_references(references, 4, seed=7, mix={"love": 0.5, "okay": 0.5})
    assert drawn == draw_references(references, 4, seed=7, mix={"love": 0.5, "okay": 0.5})
    assert Counter(r.tier for r in drawn) == {"love": 2, "okay": 2}
    draws = {
        tuple(r.name for r in draw_references(references, 4, seed, {"love": 0.5, "okay": 0.5})) for seed in range(8)
    }
    assert len(draws) > 1


def test_draw_renormalises_over_present_tiers_and_uses_largest_remainders():
    only_love = pool(love=6, okay=0)
    assert Counter(r.tier for r in draw_references(only_love, 4, 0, {"love": 0.5, "okay": 0.5})) == {"love": 4}
    assert Counter(r.tier for r in draw_references(pool(), 3, 0, {"love": 0.5, "okay": 0.5})) == {"love": 2, "okay": 1}
    assert Counter(r.tier for r in draw_references(pool(), 4, 0, {"love": 0.3, "okay": 0.7})) == {"love": 1, "okay": 3}
    # A tier smaller than its share gives its place to the others.
    assert Counter(r.tier for r in draw_references(pool(okay=1), 4, 0, {"love": 0.5, "okay": 0.5})) == {
        "love": 3,
        "okay": 1,
    }


def test_a_mix_the_pool_cannot_meet_and_an_empty_pool_are_errors():
    with pytest.raises(ValueError, match="no tier"):
        make_judge(JudgeSettings(mix={"okay": 1.0}), pool(okay=0))
    with pytest.raises(ValueError, match="empty"):
        make_judge(JudgeSettings(), [])
    with pytest.raises(ValueError, match="judge.base_url"):
        make_judge(JudgeSettings(backend="openai"), pool())


def test_parse_winner_reads_the_first_json_object():
    assert parse_winner('{"winner": "B", "reason": "softer"}') == "B"
    assert parse_winner('Sure. {"winner": "A", "reason": "x"} and {"winner": "B"}') == "A"
    assert parse_winner('{"winner": "C"}') is None
    assert parse_winner("I prefer image A") is None
    assert parse_winner('{"winner": "A", "reason": "cut off mid-sen') is None


def test_parse_verdict_keeps_the_reason_and_a_winner_without_one():
    assert parse_verdict('{"winner": "B", "reason": "  softer\\n edges "}') == ("B", "softer edges")
    assert parse_verdict('{"winner": "A"}') == ("A", None)
    assert parse_verdict('{"winner": "A", "reason": 7}') == ("A", None)
    assert parse_verdict('{"winner": "C", "reason": "neither"}') == (None, "neither")
    assert parse_verdict('{"winner": "A", "reason": "x' + "y" * 400 + '"}')[1] == "x" + "y" * 159
    assert parse_verdict("no json here") == (None, None)


# --- the OpenAI-compatible backend ---


async def test_the_judge_keeps_its_reason_from_the_order_that_shows_the_painting_first():
    def explained(a: bytes, b: bytes) -> str:
        wider = "A" if width_of(a) > width_of(b) else "B"
        return verdict(wider, f"{wider} is wider ({width_of(a)} against {width_of(b)})")

    with openai_compat_server(explained) as server:
        judge = openai_judge(server.url)
        result = await judge.judge(solid(400), group_seed=1)
        await judge.aclose()
    assert result.score == 1.0
    for comparison in result.comparisons:
        assert comparison.reason is not None and comparison.reason.startswith("A is wider (400 against ")


async def test_a_better_painting_wins_every_comparison_in_both_orders():
    with openai_compat_server(wider_wins) as server:
        judge = openai_judge(server.url)
        won = await judge.judge(solid(400), group_seed=1)
        lost = await judge.judge(solid(8), group_seed=1)
        await judge.aclose()
    assert won.score == 1.0 and won.position_bias_rate == 0.0
    assert lost.score == 0.0 and len(lost.comparisons) == 4
    assert len(server.requests) == 16  # 2 paintings x 4 references x 2 orders
    assert won.backend.startswith("openai:Qwen/Qwen3-VL-30B-A3B-Instruct")
    assert all(r.body["max_tokens"] == 220 and r.body["model"] == judge.settings.model for r in server.requests)


async def test_a_judge_that_always_says_a_scores_one_half_with_full_position_bias():
    with openai_compat_server(lambda a, b: verdict("A")) as server:
        result = await openai_judge(server.url).judge(solid(400), group_seed=2)
    assert result.score == 0.5 and result.position_bias_rate == 1.0
    assert all(c.first == "A" and c.second == "A" and c.position_biased for c in result.comparisons)


async def test_every_rollout_of_a_group_faces_the_same_references():
    with openai_compat_server(wider_wins) as server:
        judge = openai_judge(server.url)
        first = await judge.judge(solid(300), group_seed=5)
        second = await judge.judge(solid(310), group_seed=5)
    assert [c.reference for c in first.comparisons] == [c.reference for c in second.comparisons]
    assert len(judge._reference_urls) == 4  # each drawn reference encoded once, reused by the second rollout


async def test_the_judge_retries_a_flaky_service():
    with openai_compat_server(wider_wins, fail_first=2) as server:
        result = await openai_judge(server.url, references=pool(love=1, okay=0)).judge(solid(400), 0)
    assert result.score == 1.0 and len(server.requests) == 4


async def test_a_failed_call_leaves_its_comparison_unresolved_and_out_of_the_mean():
    broken = pool()[0]  # love_0: every call showing it fails

    def rule(a: bytes, b: bytes) -> str:
        return "not json" if broken.png in (a, b) else wider_wins(a, b)

    with openai_compat_server(rule) as server:
        judge = openai_judge(server.url, references=[broken, *pool()[1:2], *pool()[5:7]])
        result = await judge.judge(solid(400), 0)
    unresolved = [c for c in result.comparisons if c.score is None]
    assert [c.reference for c in unresolved] == ["love_0"] and result.score == 1.0


async def test_a_dead_service_raises_service_unavailable():
    with openai_compat_server(wider_wins, fail_first=1000, failure=Reply(502, {"error": "bad gateway"})) as server:
        with pytest.raises(ServiceUnavailable, match="HTTP 502") as failure:
            await openai_judge(server.url, attempts=2).judge(solid(400), 0)
    assert failure.value.stage == "judge" and failure.value.attempts == 2


async def test_replies_without_a_verdict_everywhere_raise_malformed():
    with openai_compat_server(lambda a, b: "I really cannot decide.") as server:
        with pytest.raises(ServiceUnavailable, match="malformed"):
            await openai_judge(server.url).judge(solid(400), 0)
    assert len(server.requests) == 8  # an unparseable verdict is not retried: temperature 0 would repeat it


async def test_the_api_key_is_sent_as_bearer_and_never_shown(monkeypatch):
    secret = "hf_judge_secret_456"
    monkeypatch.setenv("WATERCOLOUR_TEST_JUDGE_KEY", secret)
    with openai_compat_server(lambda a, b: "no verdict") as server:
        judge = openai_judge(server.url, token_env="WATERCOLOUR_TEST_JUDGE_KEY")
        with pytest.raises(ServiceUnavailable) as failure:
            await judge.judge(solid(400), 0)
        shipped = pickle.dumps(judge)
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {secret}"}
    assert secret not in str(failure.value) and secret not in repr(judge) and secret.encode() not in shipped


async def test_the_judge_and_its_settings_pickle_and_work_on_another_loop():
    settings = JudgeSettings(backend="openai", base_url="http://127.0.0.1:1/v1")
    assert pickle.loads(pickle.dumps(settings)) == settings
    with openai_compat_server(wider_wins) as server:
        judge = openai_judge(server.url)
        await judge.judge(solid(400), 3)
        clone = pickle.loads(pickle.dumps(judge))
        result = await asyncio.to_thread(asyncio.run, clone.judge(solid(400), 3))
    assert result.score == 1.0


# --- the offline stand-in ---


def painted_pool() -> list[Reference]:
    love = [rated(f"love_{i}", "love", layered_wash(seed=i)) for i in range(3)]
    okay = [rated(f"okay_{i}", "okay", layered_wash(seed=10 + i, soft=False)) for i in range(3)]
    return love + okay


async def test_offline_judge_runs_the_same_protocol_deterministically():
    judge = make_judge(JudgeSettings(), painted_pool())
    result = await judge.judge(layered_wash(seed=20), group_seed=4)
    again = await pickle.loads(pickle.dumps(judge)).judge(layered_wash(seed=20), group_seed=4)
    assert result == again
    assert "offline" in judge.backend_id and result.backend == judge.backend_id
    assert [c.reference for c in result.comparisons] == [
        r.name for r in draw_references(painted_pool(), 4, 4, {"love": 0.5, "okay": 0.5})
    ]
    assert all(c.first in ("A", "B") and c.second in ("A", "B") for c in result.comparisons)


async def test_offline_judge_puts_a_blank_page_and_a_flat_blob_below_a_wash():
    judge = make_judge(JudgeSettings(), painted_pool())
    empty = await judge.judge(blank(), group_seed=1)
    blob = await judge.judge(flat_blob(), group_seed=1)
    wash = await judge.judge(layered_wash(seed=21), group_seed=1)
    assert empty.score == 0.0 and blob.score is not None and wash.score is not None
    assert blob.score < wash.score


async def test_offline_judge_gives_its_reason_from_the_features_it_compares_named_as_offline():
    judge = make_judge(JudgeSettings(), painted_pool())
    blob = await judge.judge(flat_blob(), group_seed=1)
    wash = await judge.judge(layered_wash(seed=21), group_seed=1)
    for result in (blob, wash):
        assert all(c.reason is not None and c.reason.startswith("offline judge: ") for c in result.comparisons)
    # The reason names the winner of the order that showed the painting as A, and what it gained merit on.
    for comparison in blob.comparisons:
        assert comparison.reason is not None and comparison.reason.startswith(
            f"offline judge: {comparison.first} has "
        )
    lost = [c for c in blob.comparisons if c.first == "B"]
    assert lost, "the flat blob loses to some reference"
    words = ("more paint", "less paint", "tonal range", "edges", "palette", "centred", "closer to the loved")
    assert all(any(word in (c.reason or "") for word in words) for c in lost)
