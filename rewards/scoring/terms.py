"""The registry of reward terms: every consumer that reports parts iterates over `reward_terms()`.

A term is one module holding it as `TERM` (`rewards.term.RewardTerm`); `TERM_MODULES` lists them, and is the only
list of them. `RewardParts`, the curves, the rollout store, the step artifacts and the evaluation tables name no
term, and a term's settings live in its own model, so adding one is its module, its line here and its weight in a
preset (docs/reward.md, "Adding a term"). The gate is the first term and lives here, since the engine applies it
before any other. The order is the order the weighted sum is added in, which fixes its floating-point value: gate,
length, aesthetic, judge, then the terms added after them.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Any, TypeVar

from ground.records import GateVerdict
from ground.settings import RewardSettings
from rewards.term import RewardTerm


# Every term module but the gate's (this one), in the order their terms are added.
TERM_MODULES: tuple[str, ...] = ("rewards.length", "rewards.aesthetic", "rewards.judging.judge")

GATE_TERM: RewardTerm[Any] = RewardTerm(
    name="gate",
    measures="1 when the gate admits the sketch (paid as the weight itself), else 0",
    of_verdict=lambda verdict: float(verdict.passed),
    column="gate_pass_rate",
)

Config = TypeVar("Config", bound=RewardSettings)


def reward_terms() -> dict[str, RewardTerm[Any]]:
    """The terms by name, in the order of the sum: the gate, then the `TERM` of each module of `TERM_MODULES`."""
    return _terms_of(TERM_MODULES)


@cache
def _terms_of(modules: tuple[str, ...]) -> dict[str, RewardTerm[Any]]:
    terms: dict[str, RewardTerm[Any]] = {GATE_TERM.name: GATE_TERM}
    for name in modules:
        term = import_module(name).TERM
        if term.name in terms:
            raise ValueError(f"two reward terms are named {term.name!r}: the second is in {name}")
        terms[term.name] = term
    return terms


def term_names() -> list[str]:
    return list(reward_terms())


def sketch_terms(verdict: GateVerdict) -> dict[str, float]:
    """Every sketch term of one gate verdict."""
    return {term.name: term.of_verdict(verdict) for term in reward_terms().values() if term.of_verdict is not None}


def resolve_terms(config: Config) -> Config:
    """`config` with each service term's settings read by the term's own model (its defaults filled in), after
    refusing a weight or a setting that names no registered term (a typo such as `weights.judg` or `judg.model`
    would otherwise change nothing) and settings a term of weight above 0 cannot be built with."""
    terms = reward_terms()
    services = {name: term for name, term in terms.items() if term.is_service}
    unknown = sorted(set(config.weights.model_extra or {}) - set(terms))
    if unknown:
        raise ValueError(f"no reward term named {', '.join(unknown)}: weights name one of {', '.join(terms)}")
    strays = sorted(set(config.model_extra or {}) - set(services))
    if strays:
        known = ", ".join([*type(config).model_fields, *services])
        raise ValueError(f"no setting or reward term named {', '.join(strays)}: choose from {known}")
    settings = {name: term.settings_of(config) for name, term in services.items()}
    weights = config.weights.model_dump()
    for name, term in services.items():
        if term.check is not None and weights.get(name, 0.0) > 0:
            term.check(settings[name], weights[name])
    # Held as plain data, as a saved configuration reads back: the two compare equal.
    return config.model_copy(update={name: value.model_dump(mode="json") for name, value in settings.items()})
