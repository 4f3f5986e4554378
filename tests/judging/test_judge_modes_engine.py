"""The judge's group mode and reference curriculum through the scoring engine, on real renders, offline judge."""

from __future__ import annotations

import json

import pytest

from deployments.presets import load_config
from ground.reference_pool import load_pool
from rewards.judging.judge import build_judge, judge_settings
from rewards.scoring.scoring_engine import ScoringEngine
from watercolour.policy.procedural import compact_sketch
from watercolour.run_records.curves import CurvesFile


pytestmark = pytest.mark.browser


def counting(judge):
    """Count the backend's pairwise questions (the judge's group and curriculum wrappers ask through `inner`)."""
    inner = judge.inner
    asked = {"calls": 0}
    compare = inner.compare

    async def counted(a, b):
        asked["calls"] += 1
        return await compare(a, b)

    inner.compare = counted
    return judge, asked


async def test_group_mode_ranks_each_group_among_itself_in_g_times_g_minus_1_calls(browser_pool, tmp_path):
    config = load_config("offline", {"judge.mode": "group", "run_dir": str(tmp_path)})
    judge, asked = counting(build_judge(judge_settings(config), config.scoring))
    engine = ScoringEngine(config.scoring, tmp_path, browsers=browser_pool, clients={"judge": lambda *_: judge})
    sketches = [compact_sketch(seed, "a peach hibiscus") for seed in range(4)]
    parts = await engine.score(sketches, [11] * 4, step=1)
    wins = [part.term("judge") for part in parts]
    assert all(part.passed for part in parts), [part.verdict.violations for part in parts if part.verdict]
    assert asked["calls"] == 4 * 3  # every pair, both orders
    assert sum(wins) == pytest.approx(2.0)  # each pair hands out one win: G(G-1)/2 wins over G-1 comparisons each
    assert {c["reference"] for c in parts[0].details["judge"]["comparisons"]} == {
        "groupmate-1",
        "groupmate-2",
        "groupmate-3",
    }
    # The same group again comes from the cache; the same painting among other groupmates is judged anew.
    assert [p.term("judge") for p in await engine.score(sketches, [11] * 4, step=1)] == wins
    assert asked["calls"] == 12
    await engine.score([*sketches[:3], compact_sketch(9, "a peach hibiscus")], [11] * 4, step=1)
    assert asked["calls"] == 24
    await engine.aclose()


async def test_the_curriculum_draws_harder_references_as_the_run_wins_more(browser_pool, tmp_path):
    config = load_config("offline", {"judge.curriculum.enabled": True, "run_dir": str(tmp_path)})
    engine = ScoringEngine(config.scoring, tmp_path, browsers=browser_pool)
    curves = CurvesFile(tmp_path)
    sketch = load_pool()[0].sketch

    async def draw_after(judge_means: list[float], seed: int) -> dict:
        for mean in judge_means:
            curves.append({"step": len(curves.read()) + 1, "judge_mean": mean})
        (part,) = await engine.score([sketch], [seed], step=len(curves.read()) + 1)
        return part.details["judge"]["draw"]

    losing = await draw_after([0.1, 0.15, 0.1], seed=101)
    winning = await draw_after([0.85, 0.9, 0.95], seed=102)
    await engine.aclose()
    assert losing["recent_win_rate"] == pytest.approx(0.35 / 3) and losing["wanted"] == 0.0
    assert winning["recent_win_rate"] == pytest.approx(0.9) and winning["wanted"] == 1.0
    assert winning["drawn"] > losing["drawn"] + 0.3
    kept = json.loads((tmp_path / "judge-difficulty.json").read_text())
    assert set(kept["difficulty"]) == {reference.name for reference in load_pool()}
