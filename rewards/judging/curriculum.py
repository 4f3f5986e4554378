"""A reference curriculum: the references a group faces are drawn by difficulty, following the run's win rate.

With references drawn at random, a weak policy loses nearly every comparison and a strong one wins nearly every
one, and in both cases the judge term barely separates the paintings of a group. The curriculum keeps the
comparisons winnable about half the time (`target_win_rate`): each reference has a *difficulty* (how rarely typical
paintings beat it, measured once per run against the rest of the pool), and each group's draw prefers references
near a *wanted difficulty* that rises while the run's recent judge win rate is above the target and falls while it
is below:

    wanted = clip(0.5 + gain * (recent win rate - target), 0, 1)        (0.5 before any history)

The draw is a seeded weighted sample without replacement (weight exp(-((difficulty - wanted) / spread)^2)), so a
group's references depend only on its group seed and the run's history, which a resume restores from the run's
curves: the same references again, and the content cache stays valid. What was wanted and drawn is recorded on
every verdict.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import Any, TypeVar

from ground.records import JudgeVerdict
from rewards.judging.judge_protocol import PoolReference, Winner, pairwise_verdict
from rewards.judging.settings import CurriculumSettings


R = TypeVar("R", bound=PoolReference)
# Which of two prepared pictures wins (a backend's `compare`, over what its `prepare_*` made of each picture).
Compare = Callable[[Any, Any], Awaitable[Winner | None]]


async def reference_difficulty(
    compare: Compare, prepared: Mapping[str, Any], challengers: int, seed: int = 0
) -> dict[str, float]:
    """Per reference (name -> prepared picture), 1 minus how often other pool paintings beat it, both orders, ties
    half: 0 easy, 1 hard. A reference with no resolved comparison gets 1/2."""
    rng = random.Random(seed)
    names = sorted(prepared)
    pairs = []
    for name in names:
        others = [other for other in names if other != name]
        pairs += [(other, name) for other in rng.sample(others, min(challengers, len(others)))]

    async def beaten(other: str, name: str) -> float | None:
        a, b = prepared[other], prepared[name]
        first, second = await asyncio.gather(compare(a, b), compare(b, a))
        return None if first is None or second is None else ((first == "A") + (second == "B")) / 2

    scores = await asyncio.gather(*(beaten(other, name) for other, name in pairs))
    by_reference: dict[str, list[float]] = {name: [] for name in names}
    for (_, name), score in zip(pairs, scores, strict=True):
        if score is not None:
            by_reference[name].append(score)
    return {name: 1.0 - fmean(found) if found else 0.5 for name, found in by_reference.items()}


def wanted_difficulty(recent_win_rate: float | None, settings: CurriculumSettings) -> float:
    if recent_win_rate is None:
        return 0.5
    return min(1.0, max(0.0, 0.5 + settings.gain * (recent_win_rate - settings.target_win_rate)))


def draw_by_difficulty(
    pool: Sequence[R], k: int, seed: int, difficulty: dict[str, float], wanted: float, spread: float
) -> list[R]:
    """k references, seeded, preferring those whose difficulty is near `wanted` (Efraimidis-Spirakis keys)."""
    rng = random.Random(seed)
    keyed = []
    for reference in sorted(pool, key=lambda r: r.name):
        weight = math.exp(-(((difficulty[reference.name] - wanted) / spread) ** 2))
        # u ** (1 / w), with a floor so a far reference is unlikely rather than impossible (and no division by 0).
        keyed.append((rng.random() ** (1.0 / max(weight, 1e-6)), reference))
    keyed.sort(key=lambda item: item[0], reverse=True)
    return [reference for _, reference in keyed[:k]]


def recent_win_rate(judge_means: Sequence[float | None], window: int) -> float | None:
    """The mean of the last `window` steps' judge scores that were measured; None before any."""
    measured = [value for value in judge_means if value is not None]
    return fmean(measured[-window:]) if measured else None


# Where the run's per-step judge means live: `watercolour.run_records.curves` writes `curves.csv` with the judge term's
# column. Named here rather than imported because the curves import the term registry, which imports this module.
CURVES_FILE = "curves.csv"
JUDGE_COLUMN = "judge_mean"


def judge_history(run_dir: Path) -> list[float | None]:
    """The run's judge means, step by step, from its curves (empty before the first step is recorded)."""
    path = Path(run_dir) / CURVES_FILE
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if None not in row.values() and row["step"].isdigit()]
    return [_number(row.get(JUDGE_COLUMN)) for row in sorted(rows, key=lambda row: int(row["step"]))]


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "", "-") else None
    except ValueError:
        return None


class CurriculumJudge:
    """A judge backend whose references follow the run's win rate; preparing and comparing stay the backend's.

    The references' difficulty is measured once per run (on first use) and kept in `judge-difficulty.json` in the
    run directory, so a resumed run draws from the same difficulties.
    """

    def __init__(self, inner: Any, run_dir: Path | None) -> None:
        self.inner = inner
        self.settings = inner.settings
        self.pool = inner.pool
        self.backend_id = inner.backend_id  # the digest covers the curriculum settings
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self._difficulty: dict[str, float] | None = None
        self._measuring: asyncio.Task[dict[str, float]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_measuring": None}

    def prepare_rollout(self, png: bytes) -> Any:
        return self.inner.prepare_rollout(png)

    async def compare(self, image_a: Any, image_b: Any) -> Winner | None:
        return await self.inner.compare(image_a, image_b)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def difficulty(self) -> dict[str, float]:
        if self._difficulty is None:
            if self._measuring is None or self._measuring.get_loop() is not asyncio.get_running_loop():
                self._measuring = asyncio.get_running_loop().create_task(self._measure())
            self._difficulty = await self._measuring
        return self._difficulty

    async def _measure(self) -> dict[str, float]:
        path = self.run_dir / "judge-difficulty.json" if self.run_dir is not None else None
        if path is not None and path.is_file():
            kept = json.loads(path.read_text())
            if kept.get("backend") == self.backend_id:
                return {name: float(value) for name, value in kept["difficulty"].items()}
        prepared = {reference.name: self.inner.prepare_reference(reference) for reference in self.pool}
        found = await reference_difficulty(self.compare, prepared, self.settings.curriculum.challengers)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".tmp")
            partial.write_text(json.dumps({"backend": self.backend_id, "difficulty": found}, indent=1))
            partial.replace(path)
        return found

    async def judge(self, png: bytes, group_seed: int, subject: str | None = None) -> JudgeVerdict:
        curriculum = self.settings.curriculum
        difficulty = await self.difficulty()
        history = judge_history(self.run_dir) if self.run_dir is not None else []
        win_rate = recent_win_rate(history, curriculum.window_steps)
        wanted = wanted_difficulty(win_rate, curriculum)
        drawn = draw_by_difficulty(
            self.pool, self.settings.references, group_seed, difficulty, wanted, curriculum.spread
        )
        references = [(reference.name, self.inner.prepare_reference(reference)) for reference in drawn]
        compare = self.inner.comparer(subject)
        verdict = await pairwise_verdict(compare, self.prepare_rollout(png), references, self.backend_id)
        draw = {"recent_win_rate": win_rate, "wanted": wanted, "drawn": fmean(difficulty[r.name] for r in drawn)}
        return verdict.model_copy(update={"draw": draw})
