"""The judge the settings name, and the judge as a reward term.

`make_judge` picks the backend (`rewards.judging.openai_judge` or `rewards.judging.offline_judge`, both on the protocol
of `rewards.judging.judge_protocol`); `TERM` is the judge's win share J as a reward term, its settings model
`rewards.judging.settings.JudgeSettings`. In the default `references` mode it is one call per painting, against
the references its group seed draws (at random by tier, or by difficulty with the curriculum,
`rewards.judging.curriculum`); in `group` mode the term is batched and each painting's J is its win rate among its
group's paintings (`rewards.judging.group_judging`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ground.records import TermScore
from ground.settings import RewardSettings
from rewards.colour_words import reading_id
from rewards.errors import ServiceUnavailable
from rewards.judging.curriculum import CurriculumJudge
from rewards.judging.group_judging import GroupJudge
from rewards.judging.judge_protocol import Judge, PoolReference, draw_references
from rewards.judging.offline_judge import PoolSimilarityJudge
from rewards.judging.openai_judge import OpenAIJudge
from rewards.judging.settings import JudgeSettings
from rewards.term import Admitted, RewardTerm


def make_judge(settings: JudgeSettings, pool: Sequence[PoolReference]) -> Judge:
    """The judge the settings name, over a non-empty pool (an empty one would silently zero the judge's weight)."""
    if not pool:
        raise ValueError("the reference pool is empty: the judge has nothing to compare with (check the pool path)")
    draw_references(pool, settings.references, 0, settings.mix)  # fail at build time on a mix the pool cannot meet
    if settings.backend == "openai":
        return OpenAIJudge(settings, pool)
    return PoolSimilarityJudge(settings, pool)


async def measure_judge(judge: Any, rollouts: list[Admitted]) -> list[TermScore]:
    """References mode: one painting against the references its group seed draws. Group mode: the batch's
    paintings, each group ranked among itself."""
    if isinstance(judge, GroupJudge):
        verdicts = await judge.judge_groups([(rollout.png, rollout.group_seed) for rollout in rollouts])
    else:
        (rollout,) = rollouts
        verdicts = [await judge.judge(rollout.png, rollout.group_seed, rollout.subject)]
    scores = []
    for verdict in verdicts:
        if verdict.score is None:
            raise ServiceUnavailable("judge", "malformed: no comparison resolved in either order")
        scores.append(TermScore(value=verdict.score, detail=verdict.model_dump()))
    return scores


def judge_context(judge: Any, rollout: Admitted, batch: Sequence[Admitted]) -> str:
    """A verdict depends on the group seed (the references drawn) and, in group mode, on who the groupmates are."""
    if not isinstance(judge, GroupJudge):
        # The offline stand-in reads the subject (`rewards.judging.offline_judge`); the VLM's answer ignores it.
        reads = rollout.subject is not None and judge.backend_id.startswith("offline")
        subject = f";subject={rollout.subject};{reading_id()}" if reads else ""
        return f"group_seed={rollout.group_seed}{subject}"
    mates = sorted(other.sketch_hash for other in batch if other.group_seed == rollout.group_seed)
    return f"group_seed={rollout.group_seed};group={hashlib.sha256(' '.join(mates).encode()).hexdigest()[:16]}"


def build_judge(settings: JudgeSettings, scoring: Any) -> Any:
    """The backend, as the run's mode asks: ranked within groups, drawn by a curriculum, or plain. `scoring` (the
    engine's `ScoringSettings`) gives the reference pool and the run directory the curriculum keeps its state in."""
    from ground.reference_pool import load_pool

    # The judge's backend id covers the pool's content and the draw settings, so its cache keys do too.
    judge = make_judge(settings, load_pool(scoring.pool_dir))
    if settings.mode == "group":
        return GroupJudge(judge)
    if settings.curriculum.enabled:
        return CurriculumJudge(judge, scoring.run_dir)
    return judge


def judge_settings(config: RewardSettings) -> JudgeSettings:
    """The judge term's settings in a run configuration or the engine's settings."""
    return TERM.settings_of(config)


def check_judge(settings: JudgeSettings, weight: float) -> None:
    if settings.backend != "offline" and not settings.base_url:
        raise ValueError(
            f"judge.base_url is required: the {settings.backend} judge has weight {weight} and no base URL. Pass "
            "judge.base_url=https://router.huggingface.co/v1, or choose judge.backend=offline, or set weights.judge=0."
        )


TERM = RewardTerm(
    name="judge",
    measures="the pairwise judge's win share J in 0..1: against references drawn by the group seed, or (group "
    "mode) against the group's other paintings",
    settings=JudgeSettings,
    build=build_judge,
    check=check_judge,
    measure=measure_judge,
    batched=lambda judge: isinstance(judge, GroupJudge),
    seeded=True,
    context=judge_context,
)
