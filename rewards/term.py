"""A reward term as a unit: its name (weight key, parts key, column stem, settings key), what it measures, whether
it needs the painting, its settings model and how it is measured. A term is one module that holds it as `TERM`; the
registry (`rewards.scoring.terms`) lists those modules.

Two kinds of term. A *sketch* term is a pure function of the gate's verdict (the gate itself, the length ramp):
cheap, measured for every rollout. A *service* term needs a backend (the aesthetic scorer, the judge): its client
is built only when its weight is above 0, it sees only admitted rollouts, its answers go through the run's
content cache, and a failure of its backend becomes a dead letter. A batched service term gets one call per
scored batch (one GRPO group under the Prefect fan-out); the others get one call per rollout.

A service term's settings are its own pydantic model, with a default for every field. The run configuration holds
them under the term's name (`aesthetic: {url: ...}`, `aesthetic.url=...` on the command line); `settings_of` reads
them back as the model, so each field is declared once, in the term's module.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from ground.records import GateVerdict, TermScore
from ground.settings import RewardSettings


@dataclass(frozen=True)
class Admitted:
    """One admitted rollout, as a service term sees it."""

    png: bytes
    sketch: str
    sketch_hash: str
    group_seed: int
    # What the painting was asked to show (the prompt's subject); the offline stand-ins read it.
    subject: str | None = None


# (client, rollouts) -> one score per rollout; raises ServiceUnavailable when the backend could not answer.
Measure = Callable[[Any, list[Admitted]], Awaitable[list[TermScore]]]
Settings = TypeVar("Settings", bound=BaseModel)


@dataclass(frozen=True)
class RewardTerm(Generic[Settings]):
    """One term of the reward. Exactly one of `of_verdict` (a sketch term) and `build` (a service term) is set."""

    name: str
    measures: str
    of_verdict: Callable[[GateVerdict], float] | None = None
    # The term's settings model; a service term has one (every field with a default).
    settings: type[Settings] | None = None
    # Called with the term's settings and the engine's `ScoringSettings` (never the run configuration), for what
    # every term shares: the reference pool, the run directory.
    build: Callable[[Settings, Any], Any] | None = None
    # Refuses settings the term cannot be built with at weight `weight` > 0, naming the fix (a remote backend with
    # no URL): called when a preset loads and when an engine is built, before any client is.
    check: Callable[[Settings, float], None] | None = None
    measure: Measure | None = None
    # One call for a scored batch instead of one per rollout; a callable decides from the built client (the judge
    # batches only in its group mode).
    batched: bool | Callable[[Any], bool] = False
    # The group seed picks what the term compares with (the judge's references), so it is part of the cache key.
    seeded: bool = False
    # What else a rollout's answer depends on, for its cache key: (client, rollout, the batch's admitted rollouts)
    # -> text. The judge's group mode answers relative to the groupmates, so they are part of the key.
    context: Callable[[Any, Admitted, Sequence[Admitted]], str] | None = None
    column: str = field(default="")

    def __post_init__(self) -> None:
        if (self.of_verdict is None) == (self.build is None) or (self.build is None) != (self.measure is None):
            raise ValueError(f"term {self.name!r}: give either of_verdict, or build and measure")
        if (self.build is None) != (self.settings is None):
            raise ValueError(f"term {self.name!r}: a service term, and only one, has a settings model")
        if not self.column:
            object.__setattr__(self, "column", f"{self.name}_mean")

    @property
    def is_service(self) -> bool:
        return self.build is not None

    def settings_of(self, config: RewardSettings) -> Settings:
        """This term's settings in a run configuration or the engine's settings: what they hold under its name,
        validated by its model (its defaults where they hold nothing)."""
        if self.settings is None:
            raise ValueError(f"term {self.name!r} has no settings")
        return self.settings.model_validate((config.model_extra or {}).get(self.name) or {})

    def is_batched(self, client: Any) -> bool:
        return self.batched(client) if callable(self.batched) else self.batched

    def cache_context(self, client: Any, rollout: Admitted, batch: Sequence[Admitted]) -> str:
        if self.context is not None:
            return self.context(client, rollout, batch)
        return f"group_seed={rollout.group_seed}" if self.seeded else ""
