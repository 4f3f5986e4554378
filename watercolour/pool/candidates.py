"""The candidate folder the pool steps share: `candidates.jsonl` (append-only provenance) and `ratings.json`.

Generation appends one line per gated candidate as soon as it is rendered, so the rating page can read the file
while generation is still running; ratings are rewritten whole and atomically on every key press.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ground.files import write_atomic


RatingTier = Literal["love", "okay", "meh", "nope"]
RATING_TIERS: tuple[str, ...] = ("love", "okay", "meh", "nope")

CANDIDATES = "candidates.jsonl"
RATINGS = "ratings.json"
# Written by the `pool` flow when it suspends for ratings, removed when it resumes: which flow run to resume.
AWAITING = "awaiting.json"


class Candidate(BaseModel):
    """One generated sketch, where it came from and what the gate said of it."""

    id: str
    model: str
    endpoint: str
    subject: str
    round: int = Field(description="0 for a first draft; n for the n-th revision after a critique.")
    parent: str | None = Field(default=None, description="The candidate this one revises.")
    photo: str | None = Field(default=None, description="Reference photo file shown to the model, if any.")
    attribution: str | None = Field(default=None, description="Licence and author of that photo.")
    critique: str | None = Field(default=None, description="The critic's words on the parent that led to this one.")
    temperature: float
    passed: bool
    violations: list[str] = Field(default_factory=list)
    coverage: float | None = None
    js: str = Field(description="Sketch file, relative to the candidate folder.")
    png: str | None = Field(default=None, description="Render file, relative to the candidate folder.")


class Ratings(BaseModel):
    """A person's tiers, and the order they were given in (what undo walks back)."""

    tiers: dict[str, RatingTier] = Field(default_factory=dict)
    order: list[str] = Field(default_factory=list)
    rated_at: dict[str, float] = Field(default_factory=dict)

    def rate(self, candidate_id: str, tier: RatingTier) -> None:
        if candidate_id in self.order:
            self.order.remove(candidate_id)
        self.tiers[candidate_id] = tier
        self.order.append(candidate_id)
        self.rated_at[candidate_id] = time.time()

    def undo(self) -> str | None:
        """Forget the last rating; the id it belonged to, or None when nothing is rated."""
        if not self.order:
            return None
        last = self.order.pop()
        del self.tiers[last]
        self.rated_at.pop(last, None)
        return last


class RatingsSubmitted(BaseModel):
    """What resumes a `pool` flow waiting for ratings: the rating page sends it, and so does the Prefect UI's form."""

    tiers: dict[str, RatingTier] = Field(
        default_factory=dict,
        description="Ratings by candidate id, added to those already saved in ratings.json (the rating page "
        "sends every rating it saved; leave empty to take the saved ones as they are).",
    )


class Awaiting(BaseModel):
    """The flow run waiting for this folder's ratings."""

    flow_run_id: str
    flow_run_name: str
    timeout_s: int | None = None


def append_candidate(folder: Path, candidate: Candidate) -> None:
    with (folder / CANDIDATES).open("a", encoding="utf-8") as stream:
        stream.write(candidate.model_dump_json() + "\n")


def read_candidates(folder: Path) -> list[Candidate]:
    """Every complete line of the manifest; a line still being written by the generator is skipped."""
    path = folder / CANDIDATES
    if not path.is_file():
        raise FileNotFoundError(
            f"no {CANDIDATES} in {folder}: run `watercolour pool generate --endpoints URL --models MODEL --out {folder}` first"
        )
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    return [Candidate.model_validate_json(line) for line in lines if line.endswith("\n") and line.strip()]


def read_ratings(folder: Path) -> Ratings:
    path = folder / RATINGS
    return Ratings.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else Ratings()


def write_ratings(folder: Path, ratings: Ratings) -> None:
    write_atomic(folder / RATINGS, json.dumps(ratings.model_dump(), indent=1).encode())


def merge_submitted(folder: Path, submitted: RatingsSubmitted) -> Ratings:
    """Save the submitted tiers that differ from the saved ones (a rating the UI's form adds or changes)."""
    ratings = read_ratings(folder)
    known = {candidate.id for candidate in read_candidates(folder)}
    unknown = sorted(set(submitted.tiers) - known)
    if unknown:
        raise ValueError(f"ratings for candidates not in {folder}: {', '.join(unknown)}")
    changed = {cid: tier for cid, tier in submitted.tiers.items() if ratings.tiers.get(cid) != tier}
    for candidate_id, tier in changed.items():
        ratings.rate(candidate_id, tier)
    if changed:
        write_ratings(folder, ratings)
    return ratings


def read_awaiting(folder: Path) -> Awaiting | None:
    path = folder / AWAITING
    return Awaiting.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None
