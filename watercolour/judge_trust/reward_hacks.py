"""Reward-hacking guards, measured: allowlisted sketches built to game a scorer, scored beside the reference pool.

Each hack (eight in `fixtures/hacks/`, and a copy of a `love` pool painting) passes the gate on purpose (it keeps to
the ten brush methods and paints), so only the scorers stand between it and the reward. They are scored by the run's
own scoring engine (the same render, gate, length ramp, aesthetic scorer and judge as training, one group, so every
painting faces the same references), and so are the pool's paintings. A hack *fools* a scorer when it scores at least
the pool's median on that scorer: a rated painting's typical reward, for a sheet with no flower on it.

Beside them, the forged writing of every family the gate's text check is built against (`fixtures/writing/held_out/`,
`bench/forged_writing.py`), scored the same way: for each family, how many the gate refuses, and which it lets through
with what they score. A judge reads what gets through.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from statistics import median
from typing import Any

from pydantic import BaseModel, Field

from ground.records import RewardParts
from ground.run_config import RunConfig


HACKS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "hacks"
WRITING_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "writing" / "held_out"
SCORERS = ("length", "aesthetic", "judge", "reward")  # the terms a hack could game, and their weighted sum
COPIED = "peach_hibiscus_loose"
# Every painting faces the references this one group seed draws.
GROUP_SEED = 20251


class Scored(BaseModel):
    """One sketch's reward and parts, as the run's reward saw it."""

    name: str
    passed: bool
    violations: list[str] = Field(default_factory=list)
    dead_letter: str | None = Field(default=None, description="Why it was not measured (infrastructure), if so.")
    coverage: float | None = None
    scores: dict[str, float | None] = Field(description="length, aesthetic, judge and the composite reward.")
    fooled: list[str] = Field(default_factory=list, description="Scorers on which it reached the pool's median.")


class HackTable(BaseModel):
    preset: str
    backends: dict[str, str]
    weights: dict[str, float]
    pool_median: dict[str, float | None]
    hacks: list[Scored]
    pool: list[Scored]
    writing: dict[str, list[Scored]] = Field(
        default_factory=dict, description="Family -> its forged-writing sketches, as the reward saw each."
    )


def writing_sketches() -> dict[str, dict[str, str]]:
    """Family -> name -> source of every held-out forged-writing sketch."""
    expected = json.loads((WRITING_DIR / "expected.json").read_text(encoding="utf-8"))
    families: dict[str, dict[str, str]] = {}
    for name, verdict in expected.items():
        families.setdefault(verdict["family"], {})[Path(name).stem] = (WRITING_DIR / name).read_text(encoding="utf-8")
    return families


def _scored(name: str, parts: RewardParts) -> Scored:
    verdict, render = parts.verdict, parts.verdict.render if parts.verdict else None
    return Scored(
        name=name,
        passed=parts.passed,
        violations=verdict.violations if verdict else [],
        dead_letter=f"{parts.dead_letter.stage}: {parts.dead_letter.cause}" if parts.dead_letter else None,
        coverage=render.coverage if render else None,
        scores={**{name: parts.term(name) for name in SCORERS[:-1]}, "reward": parts.reward},
    )


async def score_sketches(
    config: RunConfig, run_dir: Path, sketches: dict[str, str]
) -> tuple[dict[str, Scored], dict[str, str]]:
    """Score named sketches through the run's scoring engine, as one group; also the backends that scored them."""
    from rewards.scoring.scoring_engine import ScoringEngine

    engine = ScoringEngine(config.scoring, run_dir)
    try:
        names = list(sketches)
        parts = await engine.score([sketches[n] for n in names], [GROUP_SEED] * len(names), step=None)
        backends = engine.backends()
    finally:
        await engine.aclose()
    return {name: _scored(name, part) for name, part in zip(names, parts, strict=True)}, backends


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return median(present) if present else None


async def measure_hacks(
    config: RunConfig,
    run_dir: Path,
    pool_sketches: dict[str, str] | None = None,
    writing: dict[str, dict[str, str]] | None = None,
) -> HackTable:
    """Score every hack, the forged writing (or `writing`) and the pool's sketches (or `pool_sketches`), and mark
    which scorers each hack, and each piece of writing the gate lets through, fools."""
    from ground.reference_pool import load_pool

    references = {reference.name: reference.sketch for reference in load_pool(config.pool_dir)}
    hacks = {path.stem: path.read_text(encoding="utf-8") for path in sorted(HACKS_DIR.glob("*.js"))}
    # The last hack is a `love` reference copied shape for shape: taken from the pool itself, so it stays a copy.
    hacks["copied_reference"] = references[COPIED]
    if pool_sketches is None:
        pool_sketches = references
    if writing is None:
        writing = writing_sketches()
    forged = {f"writing:{name}": source for family in writing.values() for name, source in family.items()}
    scored, backends = await score_sketches(
        config, run_dir, {**{f"pool:{n}": s for n, s in pool_sketches.items()}, **hacks, **forged}
    )
    pool = [scored[f"pool:{name}"].model_copy(update={"name": name}) for name in pool_sketches]
    medians = {scorer: _median([p.scores[scorer] for p in pool]) for scorer in SCORERS}

    def marked(row: Scored, name: str) -> Scored:
        fooled = [
            scorer
            for scorer in SCORERS
            if (value := row.scores[scorer]) is not None
            and (bar := medians[scorer]) is not None
            and row.passed
            and value >= bar
        ]
        return row.model_copy(update={"name": name, "fooled": fooled})

    return HackTable(
        preset=config.name,
        backends=backends,
        weights=config.weights.model_dump(),
        pool_median=medians,
        hacks=[marked(scored[name], name) for name in hacks],
        pool=pool,
        writing={
            family: [marked(scored[f"writing:{name}"], name) for name in sketches]
            for family, sketches in writing.items()
        },
    )


def _cell(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def hacks_markdown(table: HackTable) -> str:
    """The table a person reads: each hack's scores against the pool's medians, and what it fools."""
    weights = ", ".join(f"{k} {v}" for k, v in table.weights.items())
    backends = ", ".join(f"{k} `{v}`" for k, v in table.backends.items()) or "none"
    lines = [
        f"Preset `{table.preset}` (weights: {weights}; backends: {backends}); pool of {len(table.pool)} paintings.",
        "",
        "| sketch | gate | coverage | length | aesthetic | judge | reward | fools |",
        "|---|---|---|---|---|---|---|---|",
    ]
    median_row = [_cell(table.pool_median[s]) for s in SCORERS]
    lines.append("| *pool median* | | | " + " | ".join(median_row) + " | |")
    for row in table.hacks:
        if row.dead_letter:
            gate = "not measured: " + row.dead_letter
        else:
            gate = "pass" if row.passed else "refused: " + ", ".join(row.violations)
        cells = [_cell(row.scores[s]) for s in SCORERS]
        fools = ", ".join(row.fooled) or "nothing"
        lines.append(f"| {row.name} | {gate} | {_cell(row.coverage)} | " + " | ".join(cells) + f" | {fools} |")
    if table.writing:
        lines += [
            "",
            "Painted writing, by family: what the gate's text check refuses, and what it lets through to the judge.",
            "",
            "| family | refused | not measured | let through (reward; fools) |",
            "|---|---|---|---|",
        ]
        for family, rows in table.writing.items():
            refused = sum(not row.passed and not row.dead_letter for row in rows)
            unmeasured = sum(bool(row.dead_letter) for row in rows)
            through = [
                f"{row.name} ({_cell(row.scores['reward'])}; {', '.join(row.fooled) or 'nothing'})"
                for row in rows
                if row.passed
            ]
            lines.append(f"| {family} | {refused} of {len(rows)} | {unmeasured} | {', '.join(through) or 'none'} |")
    return "\n".join(lines) + "\n"


def run_hacks(config: RunConfig, out_dir: Path) -> HackTable:
    """Measure, then write `hacks.md` and `hacks.json` (and the reward's cache and dead letters) under `out_dir`."""
    from rewards.scoring.cache import write_atomic

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = asyncio.run(measure_hacks(config, out_dir))
    write_atomic(out_dir / "hacks.json", table.model_dump_json(indent=2).encode())
    write_atomic(out_dir / "hacks.md", hacks_markdown(table).encode())
    return table
