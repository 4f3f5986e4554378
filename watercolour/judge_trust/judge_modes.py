"""Reference-pool against group-relative judging, on the same groups of paintings: spread, dead groups and cost.

GRPO's advantage is a rollout's reward less its group's mean, divided by the group's spread: a group whose rewards
are all equal teaches nothing, and one whose rewards differ by a hair has the hair blown up to a whole advantage.
This measures, for each judge mode, how the judge term and the reward spread within groups, how often a group has
no spread at all, and how many judge calls a group costs. The groups are the procedural policy's compact sketches
of the subject (what the demo's warm start teaches), rendered and scored by the scoring engine.
"""

from __future__ import annotations

from pathlib import Path
from statistics import fmean, pstdev

from pydantic import BaseModel

from ground.run_config import RunConfig
from rewards.judging.judge import judge_settings


class ModeFigures(BaseModel):
    mode: str
    groups: int
    judge_spread: float
    reward_spread: float
    zero_variance_judge: float
    zero_variance_reward: float
    judge_calls_per_group: float


def _calls_per_group(config: RunConfig, size: int) -> int:
    judge = judge_settings(config)
    if judge.mode == "references":
        return 2 * size * judge.references
    pairs = (
        size * (size - 1) // 2
        if judge.pairing == "round-robin" or size <= judge.ring_neighbours + 1
        else (size * judge.ring_neighbours)
    )
    return 2 * pairs + (2 * size if judge.anchor else 0)


async def measure_mode(config: RunConfig, run_dir: Path, groups: list[list[str]], pool) -> ModeFigures:
    """Score every group under `config` (one group seed each) and summarise the within-group spreads."""
    from rewards.scoring.scoring_engine import ScoringEngine

    engine = ScoringEngine(config.scoring, run_dir, browsers=pool)
    judge_spreads, reward_spreads, calls = [], [], []
    try:
        for index, group in enumerate(groups):
            parts = await engine.score(group, [1000 + index] * len(group), step=None)
            judged = [v for p in parts if (v := p.term("judge")) is not None]
            rewards = [p.reward for p in parts if p.reward is not None]
            judge_spreads.append(pstdev(judged) if len(judged) > 1 else 0.0)
            reward_spreads.append(pstdev(rewards) if len(rewards) > 1 else 0.0)
            calls.append(_calls_per_group(config, len(judged)))
    finally:
        await engine.aclose()
    judge = judge_settings(config)
    mode = judge.mode if judge.mode == "references" else f"group ({judge.pairing})"
    return ModeFigures(
        mode=mode,
        groups=len(groups),
        judge_spread=fmean(judge_spreads),
        reward_spread=fmean(reward_spreads),
        zero_variance_judge=fmean(spread < 1e-9 for spread in judge_spreads),
        zero_variance_reward=fmean(spread < 1e-9 for spread in reward_spreads),
        judge_calls_per_group=fmean(calls),
    )


def procedural_groups(subject: str, groups: int, size: int) -> list[list[str]]:
    from watercolour.policy.procedural import compact_sketch

    return [[compact_sketch(g * size + i, subject) for i in range(size)] for g in range(groups)]


def modes_markdown(figures: list[ModeFigures], size: int) -> str:
    lines = [
        f"| judge mode | groups of {size} | judge term spread | reward spread | groups with no judge spread | "
        "groups with no reward spread | judge calls a group |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in figures:
        lines.append(
            f"| {f.mode} | {f.groups} | {f.judge_spread:.3f} | {f.reward_spread:.3f} | {f.zero_variance_judge:.0%} | "
            f"{f.zero_variance_reward:.0%} | {f.judge_calls_per_group:.0f} |"
        )
    return "\n".join(lines) + "\n"


async def compare_modes(config: RunConfig, run_dir: Path, groups: int = 8, size: int = 4) -> list[ModeFigures]:
    """The same procedural groups under the reference-pool mode and both group pairings, on one browser pool."""
    from renderers import BrowserPool

    sketches = procedural_groups(config.training.subject, groups, size)
    pool = BrowserPool.from_settings(config.render)
    await pool.start()
    try:
        figures = []
        for mode, pairing in (("references", "round-robin"), ("group", "round-robin"), ("group", "ring")):
            settings = judge_settings(config).model_copy(
                update={"mode": mode, "pairing": pairing, "ring_neighbours": 1}
            )
            figures.append(await measure_mode(config.model_copy(update={"judge": settings}), run_dir, sketches, pool))
    finally:
        await pool.close()
    return figures
