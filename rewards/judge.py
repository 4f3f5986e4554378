"""The judge the settings name, and the judge as a reward term.

`make_judge` picks the backend (`rewards.openai_judge` or `rewards.offline_judge`, both on the protocol of
`rewards.judge_protocol`); `JUDGE_TERM` registers the judge's win share J with the scoring engine: one call per
painting, against the references its group seed draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from rewards.errors import ServiceUnavailable
from rewards.judge_protocol import Judge, JudgeSettings, PoolReference, draw_references
from rewards.offline_judge import PoolSimilarityJudge
from rewards.openai_judge import OpenAIJudge
from rewards.term import Admitted, RewardTerm
from watercolour.records import TermScore


def make_judge(settings: JudgeSettings, pool: Sequence[PoolReference]) -> Judge:
    """The judge the settings name, over a non-empty pool (an empty one would silently zero the judge's weight)."""
    if not pool:
        raise ValueError("the reference pool is empty: the judge has nothing to compare with (check the pool path)")
    draw_references(pool, settings.references, 0, settings.mix)  # fail at build time on a mix the pool cannot meet
    if settings.backend == "openai":
        return OpenAIJudge(settings, pool)
    return PoolSimilarityJudge(settings, pool)


async def measure_judge(judge: Judge, rollouts: list[Admitted]) -> list[TermScore]:
    """One painting (the term is not batched) against the references its group seed draws."""
    (rollout,) = rollouts
    verdict = await judge.judge(rollout.png, rollout.group_seed)
    if verdict.score is None:
        raise ServiceUnavailable("judge", "malformed: no comparison resolved in either order")
    return [TermScore(value=verdict.score, detail=verdict.model_dump())]


class HasJudgeSettings(Protocol):
    """What the judge term reads of the run configuration."""

    @property
    def judge(self) -> JudgeSettings: ...
    @property
    def pool_dir(self) -> Path | None: ...


def build_judge(config: HasJudgeSettings) -> Judge:
    from watercolour.reference_pool import load_pool

    # The judge's backend id covers the pool's content and the draw settings, so its cache keys do too.
    return make_judge(config.judge, load_pool(config.pool_dir))


JUDGE_TERM = RewardTerm(
    name="judge",
    measures="the pairwise judge's win share J in 0..1 against references drawn by the group seed",
    needs_picture=True,
    build=build_judge,
    measure=measure_judge,
    seeded=True,
)
