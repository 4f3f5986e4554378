"""The registry of reward terms: every consumer that reports parts iterates over `TERMS`.

`RewardParts`, the curves, the rollout store, the step artifacts and the evaluation tables name no term, so
adding one is one file that defines a `RewardTerm` and calls `register`, plus one preset line giving it a weight.
The order of `TERMS` is the order the weighted sum is added in, which fixes its floating-point value: gate,
length, aesthetic, judge, then registered terms.
"""

from __future__ import annotations

from ground.records import GateVerdict
from ground.settings import Weights
from rewards.aesthetic import AESTHETIC_TERM
from rewards.judging.judge import JUDGE_TERM
from rewards.length import LENGTH_TERM
from rewards.term import RewardTerm


GATE_TERM = RewardTerm(
    name="gate",
    measures="1 when the gate admits the sketch (paid as the weight itself), else 0",
    needs_picture=False,
    of_verdict=lambda verdict: float(verdict.passed),
    column="gate_pass_rate",
)

TERMS: dict[str, RewardTerm] = {term.name: term for term in (GATE_TERM, LENGTH_TERM, AESTHETIC_TERM, JUDGE_TERM)}


def register(term: RewardTerm) -> RewardTerm:
    """Add `term` after the ones already registered; a name is registered once."""
    if term.name in TERMS:
        raise ValueError(f"a reward term named {term.name!r} is already registered")
    TERMS[term.name] = term
    return term


def unregister(name: str) -> None:
    """Take a term out again (tests register toy terms)."""
    del TERMS[name]


def term_names() -> list[str]:
    return list(TERMS)


def sketch_terms(verdict: GateVerdict) -> dict[str, float]:
    """Every sketch term of one gate verdict."""
    return {term.name: term.of_verdict(verdict) for term in TERMS.values() if term.of_verdict is not None}


def check_weights(weights: Weights) -> None:
    """Refuse a weight that names no registered term (a typo such as `weights.judg` would otherwise weigh nothing)."""
    unknown = sorted(set(weights.model_extra or {}) - set(TERMS))
    if unknown:
        raise ValueError(f"no reward term named {', '.join(unknown)}: weights name one of {', '.join(TERMS)}")
