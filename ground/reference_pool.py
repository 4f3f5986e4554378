"""The reference pool: rated paintings (sketch + render) that the pairwise judge compares rollouts against.

A pool is a folder holding `pool.json` (one entry per painting: name, file, png, tier, subject, rated_by, notes)
next to the sketches and their seed-0 renders. The project ships a seed pool inside the package; a run may point
at another folder, and changing the pool changes the taste with no code change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


BUNDLED_POOL = Path(__file__).parent / "seed_pool"
TIERS = ("love", "okay")

Tier = Literal["love", "okay"]


class PoolError(RuntimeError):
    """The pool folder is missing, empty or inconsistent; the message names the fix."""


class Reference(BaseModel):
    """One rated painting: what the judge shows next to a rollout's render."""

    name: str
    tier: Tier
    subject: str = Field(description="What the painting depicts, in prompt words ('a peach hibiscus').")
    sketch: str = Field(description="The p5.brush sketch source.", repr=False)
    png: bytes = Field(description="The render at seed 0, PNG bytes.", repr=False)
    rated_by: str = Field(description="Who set the tier: 'project' for the seed pool, 'user' for a person's rating.")
    notes: str = ""


class _Entry(BaseModel):
    name: str
    file: str
    png: str
    tier: Tier
    subject: str
    rated_by: str
    notes: str = ""


def load_pool(path: Path | None = None) -> list[Reference]:
    """Read every reference listed in `path/pool.json` (default: the bundled seed pool), in listed order."""
    folder = Path(path) if path is not None else BUNDLED_POOL
    index = folder / "pool.json"
    if not index.is_file():
        raise PoolError(
            f"no reference pool at {folder} (missing pool.json): pass the folder of a pool, "
            f"or omit the path to use the bundled seed pool"
        )
    raw = json.loads(index.read_text(encoding="utf-8"))
    entries = [_Entry.model_validate(item) for item in raw["references"]]
    if not entries:
        raise PoolError(f"the reference pool at {folder} lists no paintings: add entries to {index.name}")
    missing = [name for e in entries for name in (e.file, e.png) if not (folder / name).is_file()]
    if missing:
        raise PoolError(f"the reference pool at {folder} lacks files listed in pool.json: {', '.join(missing)}")
    return [
        Reference(
            name=e.name,
            tier=e.tier,
            subject=e.subject,
            sketch=(folder / e.file).read_text(encoding="utf-8"),
            png=(folder / e.png).read_bytes(),
            rated_by=e.rated_by,
            notes=e.notes,
        )
        for e in entries
    ]


def by_tier(refs: list[Reference]) -> dict[str, list[Reference]]:
    """Group references by tier; every known tier is a key, possibly with an empty list."""
    groups: dict[str, list[Reference]] = {tier: [] for tier in TIERS}
    for ref in refs:
        groups[ref.tier].append(ref)
    return groups


def pool_revision(pool_dir: Path | None = None) -> str:
    """Sixteen hex digits over pool.json and every file it lists (default: the bundled pool): the revision a run
    names, and what `pool pack` writes to REVISION."""
    import hashlib

    folder = Path(pool_dir) if pool_dir is not None else BUNDLED_POOL
    index = folder / "pool.json"
    if not index.is_file():
        raise PoolError(f"no reference pool at {folder} (missing pool.json): pass the folder of a pool")
    digest = hashlib.sha256(index.read_bytes())
    for entry in json.loads(index.read_text(encoding="utf-8"))["references"]:
        for name in (entry["file"], entry["png"]):
            digest.update(name.encode() + b"\0" + hashlib.sha256((folder / name).read_bytes()).digest())
    return digest.hexdigest()[:16]


def pool_fingerprint(references: list[Reference]) -> str:
    """A hash of the pool's content (names, tiers, pictures): what a run's judge will compare against."""
    import hashlib

    digest = hashlib.sha256()
    for reference in sorted(references, key=lambda r: r.name):
        digest.update(f"{reference.name}\0{reference.tier}\0".encode() + hashlib.sha256(reference.png).digest())
    return digest.hexdigest()[:16]


def pool_summary(references: list[Reference]) -> dict:
    """Size, tiers and fingerprint: what a run records about the pool it trained against."""
    tiers: dict[str, int] = {}
    for reference in references:
        tiers[reference.tier] = tiers.get(reference.tier, 0) + 1
    return {"references": len(references), "tiers": tiers, "fingerprint": pool_fingerprint(references)}
