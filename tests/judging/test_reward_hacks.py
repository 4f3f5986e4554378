"""Reward hacks: allowlisted sketches built to game the scorers, scored by the run's own reward beside the pool."""

from __future__ import annotations

import pytest

from deployments.presets import load_config
from ground.reference_pool import load_pool
from watercolour.judge_trust.reward_hacks import HACKS_DIR, hacks_markdown, measure_hacks, writing_sketches


pytestmark = [pytest.mark.browser, pytest.mark.slow]


async def test_each_hack_passes_the_gate_and_the_table_marks_what_it_fools(tmp_path):
    pool = {r.name: r.sketch for r in load_pool()[:3]}  # peach_hibiscus_loose is first: the hack copies it
    upside_down = dict(list(writing_sketches()["upside_down"].items())[:2])  # two of a family's six, for time
    table = await measure_hacks(load_config("offline"), tmp_path, pool, {"upside_down": upside_down})
    rows = {row.name: row for row in table.hacks}
    assert set(rows) == {path.stem for path in HACKS_DIR.glob("*.js")} | {"copied_reference"}
    # The premise of every hack: it keeps to the allowlist and paints, so only the scorers can stop it.
    failed = {n: r.dead_letter or r.violations for n, r in rows.items() if not r.passed}
    assert not failed, failed
    # A copy of a pool painting renders the same pixels, so the offline aesthetic cannot tell it from the original.
    original = next(p for p in table.pool if p.name == "peach_hibiscus_loose")
    assert rows["copied_reference"].scores["aesthetic"] == original.scores["aesthetic"]
    assert "aesthetic" in rows["copied_reference"].fooled
    # A lone disc is under the statistics score's coverage ramp; in the subject's colour it keeps only a share of
    # the subject match (rewards.offline_aesthetic.with_subject), far under the pool's median: it fools nothing.
    disc = rows["one_disc"].scores["aesthetic"]
    assert disc is not None and disc < 0.15 and rows["one_disc"].fooled == []
    for row in rows.values():
        for scorer in ("aesthetic", "judge", "reward"):
            value, bar = row.scores[scorer], table.pool_median[scorer]
            assert (scorer in row.fooled) == (value is not None and bar is not None and value >= bar)
    page = hacks_markdown(table)
    assert "| *pool median* |" in page and "offline-image-stats-v1" in page
    # Forged writing is scored beside them, and the table says how much of each family the gate refuses.
    writing = table.writing["upside_down"]
    assert [row.name for row in writing] == list(upside_down)
    refused = sum("text_in_picture" in row.violations for row in writing)
    assert f"| upside_down | {refused} of 2 | 0 |" in page


def test_every_family_of_forged_writing_is_in_the_table() -> None:
    from bench.forged_writing import FAMILIES

    families = writing_sketches()
    assert set(families) == set(FAMILIES) and all(len(sketches) >= 5 for sketches in families.values())


def test_the_table_names_the_writing_the_gate_lets_through_and_what_it_fools() -> None:
    from watercolour.judge_trust.reward_hacks import HackTable, Scored

    scores = {"length": 0.0, "aesthetic": 0.5, "judge": 0.25, "reward": 0.4}
    refused = Scored(name="spaced_0", passed=False, violations=["text_in_picture"], scores=scores)
    through = Scored(name="spaced_3", passed=True, scores=scores, fooled=["aesthetic"])
    table = HackTable(
        preset="offline", backends={}, weights={}, pool_median=scores, hacks=[], pool=[],
        writing={"spaced": [refused, through]},
    )  # fmt: skip
    assert "| spaced | 1 of 2 | 0 | spaced_3 (0.400; aesthetic) |" in hacks_markdown(table)


def test_a_hack_that_could_not_be_measured_says_why_not_refused() -> None:
    from watercolour.judge_trust.reward_hacks import HackTable, Scored

    scores = {"length": None, "aesthetic": None, "judge": None, "reward": None}
    row = Scored(name="confetti", passed=False, dead_letter="render: renderer unavailable", scores=scores)
    table = HackTable(preset="offline", backends={}, weights={}, pool_median=scores, hacks=[row], pool=[])
    assert "| confetti | not measured: render: renderer unavailable |" in hacks_markdown(table)
