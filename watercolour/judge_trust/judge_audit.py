"""The judge audit: how far a pairwise judge can be trusted, measured on the pool and, when given, a run's paintings.

The judge carries most of the reward in the judge-led recipe, so its faults become the policy's lessons. Every
figure here comes from asking the judge itself, through the same `compare(png_a, png_b)` the reward uses:

| figure | question | healthy |
|---|---|---|
| position bias | of pairs asked in both orders, how often does the winner change with the order? | near 0 |
| first-position share | of all verdicts, how often is the image shown first (A) named? | near 1/2 |
| self-consistency | the same pair in the same order asked twice: how often the same answer? | near 1 |
| transitivity | of triads whose three pairs are decided (one image wins both orders), how many are cycles? | near 0 |
| decisiveness | share of those triads' pairs that are decided at all | high |
| tier agreement | over `love` x `okay` pairs, the `love` painting's score (1 both orders, 1/2 split, 0 lost) | above 1/2 |
| difficulty | per reference: how often typical paintings beat it (a run's rollouts, else the rest of the pool) | spread |

Every audit runs two planted controls beside the judge under audit, on the same pairs: a judge that always answers
"A" and a coin flip. Their columns show what each figure looks like when a judge is broken in a known way, and the
tests hold the audit to detecting both.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any, Protocol

from pydantic import BaseModel, Field

from rewards.judging.judge_protocol import Winner


class PairwiseJudge(Protocol):
    """What the audit needs of a judge backend (`rewards.judging.judge_protocol.PairwiseJudge` is one): a name, how a
    picture is prepared for it, and which of two prepared pictures is the better one."""

    backend_id: str

    def prepare_rollout(self, png: bytes) -> Any: ...

    async def compare(self, image_a: Any, image_b: Any) -> Winner | None: ...


@dataclass(frozen=True)
class Picture:
    """A painting the audit shows the judge: a pool reference (with its tier) or a run's rollout (tier None)."""

    name: str
    png: bytes
    tier: str | None = None


class AlwaysFirstJudge:
    """Planted control: names image A every time (total position bias, perfectly self-consistent)."""

    backend_id = "planted-always-a"

    def prepare_rollout(self, png: bytes) -> bytes:
        return png

    async def compare(self, image_a: bytes, image_b: bytes) -> Winner | None:
        return "A"


class CoinFlipJudge:
    """Planted control: a seeded coin flip per question (no taste at all)."""

    backend_id = "planted-coin-flip"

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    def prepare_rollout(self, png: bytes) -> bytes:
        return png

    async def compare(self, image_a: bytes, image_b: bytes) -> Winner | None:
        return "A" if self._rng.random() < 0.5 else "B"


class AuditSettings(BaseModel):
    """How much to ask. The default audit asks a VLM a few hundred questions (the report counts them)."""

    pairs: int = Field(default=24, ge=1, description="Random pairs asked in both orders, and each order twice.")
    triads: int = Field(default=24, ge=0, description="Random triads checked for cycles.")
    tier_pairs: int = Field(default=24, ge=0, description="love x okay pairs checked against the human tiers.")
    challengers: int = Field(default=4, ge=0, description="Typical paintings each reference is compared with.")
    seed: int = Field(default=0, description="Seeds every sample the audit draws.")
    max_concurrency: int = Field(default=8, ge=1, description="Questions in flight at once.")


# Where a figure stops being healthy. A VLM judge at temperature 0 should be near-deterministic; these are loose
# enough for one that samples, and far from what the planted controls produce (bias 1 and 1/2, consistency 1/2).
THRESHOLDS = {
    "position_bias": 0.25,
    "first_position_skew": 0.25,
    "self_consistency": 0.9,
    "transitivity_violations": 0.1,
    "tier_agreement": 0.6,
    "unresolved": 0.1,
}


class Figure(BaseModel):
    """One measured rate and how many questions (or pairs, triads) it rests on; None when nothing was measured."""

    value: float | None
    n: int


class ReferenceDifficulty(BaseModel):
    name: str
    tier: str
    comparisons: int = Field(description="Comparisons with challengers that resolved (both orders answered).")
    beaten: float | None = Field(description="Challengers' mean score against it: how often typical paintings win.")


class JudgeAudit(BaseModel):
    """The figures for one judge; `flags` names every figure past its threshold."""

    backend: str
    questions: int
    position_bias: Figure
    first_position_share: Figure
    self_consistency: Figure
    transitivity_violations: Figure
    decisiveness: Figure
    tier_agreement: Figure
    unresolved: Figure
    difficulty: list[ReferenceDifficulty]
    flags: list[str]


class AuditReport(BaseModel):
    """The judge under audit and the planted controls, asked the same questions."""

    pictures: int
    references: int
    rollouts: int
    settings: AuditSettings
    audited: JudgeAudit
    controls: list[JudgeAudit]


class _Asker:
    """Asks one judge, bounded; remembers first answers (for reuse) and counts every question."""

    def __init__(self, judge: PairwiseJudge, limit: int) -> None:
        self.judge = judge
        self.questions = 0
        self.unresolved = 0
        self.answers: list[Winner] = []
        self._memo: dict[tuple[str, str], Winner | None] = {}
        self._prepared: dict[str, Any] = {}  # each picture encoded (or profiled) once, asked about many times
        self._semaphore = asyncio.Semaphore(limit)

    def _picture(self, picture: Picture) -> Any:
        if picture.name not in self._prepared:
            self._prepared[picture.name] = self.judge.prepare_rollout(picture.png)
        return self._prepared[picture.name]

    async def ask(self, a: Picture, b: Picture, fresh: bool = False) -> Winner | None:
        key = (a.name, b.name)
        if not fresh and key in self._memo:
            return self._memo[key]
        async with self._semaphore:
            winner = await self.judge.compare(self._picture(a), self._picture(b))
        self.questions += 1
        if winner is None:
            self.unresolved += 1
        else:
            self.answers.append(winner)
        if not fresh:
            self._memo[key] = winner
        return winner

    async def both(self, a: Picture, b: Picture) -> float | None:
        """a's score against b over both orders: 1, 1/2 or 0; None when either order got no answer."""
        first, second = await asyncio.gather(self.ask(a, b), self.ask(b, a))
        if first is None or second is None:
            return None
        return ((first == "A") + (second == "B")) / 2


def _rate(values: Sequence[float | bool]) -> Figure:
    return Figure(value=fmean(values) if values else None, n=len(values))


def _sample(population: list, k: int, rng: random.Random) -> list:
    return rng.sample(population, min(k, len(population)))


async def audit_judge(
    judge: PairwiseJudge, references: Sequence[Picture], rollouts: Sequence[Picture], settings: AuditSettings
) -> JudgeAudit:
    """Ask `judge` the audit's questions; every sample is drawn from `settings.seed`, so controls face the same."""
    rng = random.Random(settings.seed)
    asker = _Asker(judge, settings.max_concurrency)
    pictures = [*references, *rollouts]

    # Position bias and self-consistency: each pair in both orders, and each order asked a second time.
    pairs = _sample(list(itertools.combinations(pictures, 2)), settings.pairs, rng)
    firsts = await asyncio.gather(*(asker.both(a, b) for a, b in pairs))
    repeats = await asyncio.gather(*(asker.ask(x, y, fresh=True) for a, b in pairs for x, y in ((a, b), (b, a))))
    originals = await asyncio.gather(*(asker.ask(x, y) for a, b in pairs for x, y in ((a, b), (b, a))))  # memo
    position_bias = _rate([score == 0.5 for score in firsts if score is not None])
    consistency = _rate([o == r for o, r in zip(originals, repeats, strict=True) if o is not None and r is not None])

    # Transitivity over decided triads.
    triads = _sample(list(itertools.combinations(pictures, 3)), settings.triads, rng)
    decided: list[bool] = []
    cycles: list[bool] = []
    for a, b, c in triads:
        scores = await asyncio.gather(asker.both(a, b), asker.both(b, c), asker.both(c, a))
        decided.extend(score in (0.0, 1.0) for score in scores)
        if all(score in (0.0, 1.0) for score in scores):
            # a>b, b>c, c>a (all 1) or the reverse (all 0) is a cycle; any other decided triad is an order.
            cycles.append(len(set(scores)) == 1)

    # Agreement with the human tiers.
    love = [p for p in references if p.tier == "love"]
    okay = [p for p in references if p.tier == "okay"]
    tier_pairs = _sample(list(itertools.product(love, okay)), settings.tier_pairs, rng)
    tier_scores = await asyncio.gather(*(asker.both(a, b) for a, b in tier_pairs))

    # Each reference's difficulty against typical paintings.
    difficulty = []
    for reference in references:
        field = list(rollouts) or [p for p in references if p.name != reference.name]
        challengers = _sample(field, settings.challengers, rng)
        beaten = await asyncio.gather(*(asker.both(challenger, reference) for challenger in challengers))
        resolved = [s for s in beaten if s is not None]
        difficulty.append(
            ReferenceDifficulty(
                name=reference.name,
                tier=reference.tier or "",
                comparisons=len(resolved),
                beaten=fmean(resolved) if resolved else None,
            )
        )

    report = JudgeAudit(
        backend=judge.backend_id,
        questions=asker.questions,
        position_bias=position_bias,
        first_position_share=_rate([answer == "A" for answer in asker.answers]),
        self_consistency=consistency,
        transitivity_violations=_rate(cycles),
        decisiveness=_rate(decided),
        tier_agreement=_rate([s for s in tier_scores if s is not None]),
        unresolved=Figure(value=asker.unresolved / asker.questions if asker.questions else None, n=asker.questions),
        difficulty=difficulty,
        flags=[],
    )
    return report.model_copy(update={"flags": flags(report)})


def flags(report: JudgeAudit) -> list[str]:
    """Every figure past its threshold, in words a reader can act on."""
    found = []

    def past(figure: Figure, limit: float, above: bool) -> bool:
        return figure.value is not None and (figure.value > limit if above else figure.value < limit)

    if past(report.position_bias, THRESHOLDS["position_bias"], above=True):
        found.append("position bias: the winner changes with the presentation order")
    share = report.first_position_share.value
    if share is not None and abs(share - 0.5) > THRESHOLDS["first_position_skew"]:
        found.append(f"prefers the image shown {'first (A)' if share > 0.5 else 'second (B)'}")
    if past(report.self_consistency, THRESHOLDS["self_consistency"], above=False):
        found.append("inconsistent: the same question gets different answers")
    if past(report.transitivity_violations, THRESHOLDS["transitivity_violations"], above=True):
        found.append("intransitive: decided triads form cycles")
    if report.transitivity_violations.n == 0 and report.decisiveness.n:
        found.append("indecisive: no triad had all three pairs decided")
    if past(report.tier_agreement, THRESHOLDS["tier_agreement"], above=False):
        found.append("disagrees with the human tiers: love does not reliably beat okay")
    if past(report.unresolved, THRESHOLDS["unresolved"], above=True):
        found.append("unresolved: many replies named no winner")
    return found


async def audit(
    judge: PairwiseJudge,
    references: Sequence[Picture],
    rollouts: Sequence[Picture] = (),
    settings: AuditSettings | None = None,
) -> AuditReport:
    """Audit `judge` and the two planted controls on the same questions."""
    settings = settings or AuditSettings()
    if len(references) < 3:
        raise ValueError(f"the audit needs at least 3 reference paintings, the pool has {len(references)}")
    judges: list[PairwiseJudge] = [judge, AlwaysFirstJudge(), CoinFlipJudge(settings.seed)]
    audited, *planted = [await audit_judge(j, references, rollouts, settings) for j in judges]
    return AuditReport(
        pictures=len(references) + len(rollouts),
        references=len(references),
        rollouts=len(rollouts),
        settings=settings,
        audited=audited,
        controls=planted,
    )


def run_paintings(run_dir: Path) -> list[Picture]:
    """The rendered rollouts of a run directory (`rollouts/png/<step>/<group>_<index>.png`)."""
    folder = Path(run_dir) / "rollouts" / "png"
    if not folder.is_dir():
        raise FileNotFoundError(f"no rendered rollouts under {folder}: pass a run directory that has trained")
    return [Picture(f"{p.parent.name}/{p.stem}", p.read_bytes()) for p in sorted(folder.glob("*/*.png"))]
