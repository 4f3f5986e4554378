"""The reference curriculum and group-relative judging, with judges whose preferences are known."""

from __future__ import annotations

from statistics import fmean

import pytest

from ground.reference_pool import Reference
from rewards.errors import ServiceUnavailable
from rewards.judging.curriculum import draw_by_difficulty, recent_win_rate, reference_difficulty, wanted_difficulty
from rewards.judging.group_judging import group_verdicts, pairings
from rewards.judging.settings import CurriculumSettings
from tests.servers.images import solid, width_of


class Counting:
    """A planted judge: the wider image wins; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, a: bytes, b: bytes) -> str | None:
        self.calls += 1
        return "A" if width_of(a) > width_of(b) else "B"


def references(count: int = 10) -> list[Reference]:
    return [
        Reference(name=f"ref{i:02d}", tier="love", subject="x", sketch="", png=solid(20 + 10 * i), rated_by="test")
        for i in range(count)
    ]


async def test_a_reference_that_every_other_beats_is_easy_and_one_nobody_beats_is_hard():
    pool = references()
    difficulty = await reference_difficulty(Counting(), {r.name: r.png for r in pool}, challengers=9)
    assert difficulty["ref00"] == 0.0 and difficulty["ref09"] == 1.0
    assert [difficulty[r.name] for r in pool] == sorted(difficulty.values())


def test_the_wanted_difficulty_follows_the_win_rate_towards_the_target():
    settings = CurriculumSettings(enabled=True, target_win_rate=0.5, gain=1.5)
    assert wanted_difficulty(None, settings) == 0.5
    assert wanted_difficulty(0.8, settings) > 0.5 > wanted_difficulty(0.2, settings)
    assert wanted_difficulty(1.0, settings) == 1.0 and wanted_difficulty(0.0, settings) == 0.0
    assert recent_win_rate([0.1, None, 0.2, 0.6, 0.8], window=3) == pytest.approx((0.2 + 0.6 + 0.8) / 3)
    assert recent_win_rate([None], window=3) is None


def test_the_draw_is_seeded_and_prefers_references_near_the_wanted_difficulty():
    pool = references()
    difficulty = {r.name: i / 9 for i, r in enumerate(pool)}

    def mean_drawn(wanted: float) -> float:
        drawn = [draw_by_difficulty(pool, 4, seed, difficulty, wanted, 0.2) for seed in range(50)]
        return fmean(difficulty[r.name] for group in drawn for r in group)

    assert draw_by_difficulty(pool, 4, 7, difficulty, 0.8, 0.2) == draw_by_difficulty(pool, 4, 7, difficulty, 0.8, 0.2)
    assert mean_drawn(0.9) > 0.6 > 0.4 > mean_drawn(0.1)
    assert len({r.name for r in draw_by_difficulty(pool, 4, 3, difficulty, 0.5, 0.2)}) == 4


async def test_round_robin_ranks_a_group_and_counts_its_calls():
    judge = Counting()
    group = [solid(w) for w in (40, 10, 30, 20)]
    verdicts = await group_verdicts(judge, group, "planted-wider")
    assert [v.score for v in verdicts] == [1.0, 0.0, pytest.approx(2 / 3), pytest.approx(1 / 3)]
    assert judge.calls == 4 * 3  # G(G-1): every pair in both orders
    assert all(v.position_bias_rate == 0.0 for v in verdicts)


async def test_a_ring_costs_two_g_m_calls_and_an_anchor_two_g_more():
    judge = Counting()
    group = [solid(w) for w in (10, 20, 30, 40, 50, 60)]
    await group_verdicts(judge, group, "planted-wider", mode="ring", neighbours=1, seed=3, anchor=("ref", solid(35)))
    assert judge.calls == 2 * 6 * 1 + 2 * 6
    assert len(pairings(6, "ring", 2, seed=3)) == 12 and len(pairings(3, "ring", 2, seed=3)) == 3


async def test_a_lone_painting_scores_one_half_without_an_anchor():
    (verdict,) = await group_verdicts(Counting(), [solid(30)], "planted-wider")
    assert verdict.score == 0.5 and verdict.comparisons == []


async def test_a_painting_left_with_no_resolved_comparison_fails_the_group_as_unavailable():
    async def down(a: bytes, b: bytes) -> str | None:
        raise ServiceUnavailable("judge", "connect error", 4)

    with pytest.raises(ServiceUnavailable, match="connect error"):
        await group_verdicts(down, [solid(10), solid(20), solid(30)], "down")
