"""Calibrate a pool against the judge: how often do today's policy paintings beat each reference?

Each sampled painting is judged against every reference, in both presentation orders, through the judge's own
protocol (a judge whose draw is the whole pool). A reference the policy beats more than three times in four is
easy; under one in four it is out of reach; between, it is a useful rung. Unresolved comparisons (no verdict in
either order) are left out of the rate: the published tool counted them as losses, which made a flaky judge look
like a strong pool.
"""

from __future__ import annotations

import glob
import json
import random
from pathlib import Path
from typing import Any

from ground.reference_pool import load_pool
from rewards.errors import ServiceUnavailable
from rewards.judging.judge import make_judge
from rewards.judging.settings import JudgeSettings


EASY_ABOVE = 0.75
OUT_OF_REACH_BELOW = 0.25


def find_paintings(where: str) -> list[Path]:
    """PNG files in a folder, or matching a glob."""
    folder = Path(where)
    found = sorted(folder.glob("*.png")) if folder.is_dir() else sorted(Path(p) for p in glob.glob(where))
    if not found:
        raise FileNotFoundError(f"no PNG paintings at {where}: pass a folder of renders or a glob like 'run/*.png'")
    return found


def band(win_rate: float | None) -> str:
    if win_rate is None:
        return "unmeasured"
    if win_rate > EASY_ABOVE:
        return "easy"
    return "out_of_reach" if win_rate < OUT_OF_REACH_BELOW else "rung"


async def calibrate(pool_dir: Path | None, paintings: list[Path], k: int, settings: JudgeSettings, seed: int = 0):
    """Per reference: win rate over resolved comparisons, counts, and its band; `k` paintings sampled with `seed`."""
    pool = load_pool(pool_dir)
    sample = random.Random(seed).sample(paintings, min(k, len(paintings)))
    # Drawing every reference of every tier turns the judge's seeded draw into "compare with the whole pool".
    whole_pool = settings.model_copy(update={"references": len(pool), "mix": {r.tier: 1.0 for r in pool}})
    judge = make_judge(whole_pool, pool)
    scores: dict[str, list[float]] = {r.name: [] for r in pool}
    unresolved = dict.fromkeys(scores, 0)
    try:
        for painting in sample:
            try:
                verdict = await judge.judge(painting.read_bytes(), group_seed=0)
            except ServiceUnavailable:  # nothing resolved for this painting: every comparison is unresolved
                for name in unresolved:
                    unresolved[name] += 1
                continue
            for comparison in verdict.comparisons:
                if comparison.score is None:
                    unresolved[comparison.reference] += 1
                else:
                    scores[comparison.reference].append(comparison.score)
    finally:
        await judge.aclose()
    references: list[dict[str, Any]] = []
    for reference in pool:
        won = scores[reference.name]
        rate = sum(won) / len(won) if won else None
        references.append(
            {
                "name": reference.name,
                "tier": reference.tier,
                "win_rate": rate,
                "resolved": len(won),
                "unresolved": unresolved[reference.name],
                "band": band(rate),
            }
        )
    bands: dict[str, list[str]] = {"easy": [], "rung": [], "out_of_reach": [], "unmeasured": []}
    for row in references:
        bands[row["band"]].append(row["name"])
    return {
        "judge": judge.backend_id,
        "paintings": [str(p) for p in sample],
        "thresholds": {"easy_above": EASY_ABOVE, "out_of_reach_below": OUT_OF_REACH_BELOW},
        "references": references,
        "bands": bands,
    }


def write_report(report: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
