"""Which subjects a pool refresh should generate for: thin ones, and ones whose references miss the policy.

A subject of the training prompts is thin when the pool holds fewer than `minimum` references of it (love and
okay together): the judge then compares a painting of it with references of other flowers. A subject is also due
when calibration put every one of its measured references in one band at an end (all easy, or all out of
reach): the policy gets no rung there. Thin subjects come first, then mis-set ones, each list in prompt order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ground.prompt import SUBJECTS
from ground.reference_pool import Reference


def refresh_plan(
    references: list[Reference],
    calibration: dict[str, Any] | None,
    subjects: tuple[str, ...] = SUBJECTS,
    minimum: int = 2,
    limit: int = 4,
) -> list[dict[str, Any]]:
    """Rows of (subject, references, reason) for at most `limit` subjects that need new candidates."""
    counts = {subject: 0 for subject in subjects}
    for reference in references:
        if reference.subject in counts:
            counts[reference.subject] += 1
    bands: dict[str, set[str]] = {}
    if calibration is not None:
        subject_of = {reference.name: reference.subject for reference in references}
        for row in calibration["references"]:
            if row["band"] != "unmeasured" and row["name"] in subject_of:
                bands.setdefault(subject_of[row["name"]], set()).add(row["band"])
    rows = [
        {"subject": subject, "references": count, "reason": f"{count} references (fewer than {minimum})"}
        for subject, count in counts.items()
        if count < minimum
    ]
    for subject, seen in bands.items():
        if subject in counts and counts[subject] >= minimum and seen in ({"easy"}, {"out_of_reach"}):
            (band,) = seen
            rows.append({"subject": subject, "references": counts[subject], "reason": f"every reference {band}"})
    return rows[:limit]


def latest_pool(pool_root: Path) -> Path | None:
    """The revision `pool_root/LATEST` names (the `pool` flow's last pack), or None: use the bundled pool."""
    latest = pool_root / "LATEST"
    return pool_root / "revisions" / latest.read_text(encoding="utf-8").strip() if latest.is_file() else None


def read_calibration(pool_dir: Path | None) -> dict[str, Any] | None:
    path = pool_dir / "calibration.json" if pool_dir is not None else None
    return json.loads(path.read_text(encoding="utf-8")) if path is not None and path.is_file() else None
