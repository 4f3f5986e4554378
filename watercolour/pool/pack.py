"""Pack rated candidates into a pool: a `datasets` dataset plus the `pool.json` layout that `load_pool` reads.

`love` and `okay` become references; `meh` stays in the dataset as a rung the judge does not draw (yet), `nope` and
unrated candidates are dropped. `REVISION` is a content hash of pool.json and the files it lists, so a run can
record which pool taught it. The bundled seed pool packs the same way, marked `rated_by: project`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ground.reference_pool import TIERS, Reference, load_pool, pool_revision
from watercolour.pool.candidates import read_candidates, read_ratings


DATASET = "dataset"
REVISION = "REVISION"
PACKED_TIERS = ("love", "okay", "meh")


def candidate_rows(folder: Path) -> list[dict[str, Any]]:
    """One row per candidate a person rated love, okay or meh, in rating order."""
    candidates = {c.id: c for c in read_candidates(folder)}
    ratings = read_ratings(folder)
    rows = []
    for candidate_id in ratings.order:
        tier, candidate = ratings.tiers[candidate_id], candidates[candidate_id]
        if tier not in PACKED_TIERS or candidate.png is None:
            continue
        rows.append(
            {
                "name": candidate.id,
                "image": (folder / candidate.png).read_bytes(),
                "sketch": (folder / candidate.js).read_text(encoding="utf-8"),
                "tier": tier,
                "subject": candidate.subject,
                "model": candidate.model,
                "round": candidate.round,
                "photo": candidate.photo,
                "attribution": candidate.attribution,
                "coverage": candidate.coverage,
                "rated_by": "user",
                "notes": candidate.critique or "",
            }
        )
    if not any(row["tier"] in TIERS for row in rows):
        raise ValueError(
            f"no candidate in {folder} is rated love or okay: rate some with `watercolour pool rate {folder}`"
        )
    return rows


def bundled_rows() -> list[dict[str, Any]]:
    """The project's seed pool as dataset rows."""
    from renderers.coverage import paint_coverage

    return [
        {
            "name": r.name,
            "image": r.png,
            "sketch": r.sketch,
            "tier": r.tier,
            "subject": r.subject,
            "model": "project",
            "round": 0,
            "photo": None,
            "attribution": None,
            "coverage": paint_coverage(r.png),
            "rated_by": r.rated_by,
            "notes": r.notes,
        }
        for r in load_pool()
    ]


def write_pool(rows: list[dict[str, Any]], out: Path, description: str) -> str:
    """Write the dataset and the loader layout into `out`; the pool's revision."""
    from datasets import Dataset, Features, Image, Value

    out.mkdir(parents=True, exist_ok=True)
    features = Features(
        {
            **{key: Value("string") for key in ("name", "sketch", "tier", "subject", "model", "photo")},
            **{key: Value("string") for key in ("attribution", "rated_by", "notes")},
            "image": Image(),
            "round": Value("int32"),
            "coverage": Value("float32"),
        }
    )
    columns = {key: [row[key] for row in rows] for key in features}
    columns["image"] = [{"bytes": row["image"], "path": f"{row['name']}.png"} for row in rows]
    dataset = Dataset.from_dict(columns, features=features)
    shutil.rmtree(out / DATASET, ignore_errors=True)  # save_to_disk will not overwrite a dataset in place
    dataset.save_to_disk(str(out / DATASET))
    references = []
    for row in rows:
        if row["tier"] not in TIERS:
            continue
        (out / f"{row['name']}.js").write_text(row["sketch"], encoding="utf-8")
        (out / f"{row['name']}.png").write_bytes(row["image"])
        keys = ("name", "tier", "subject", "rated_by", "notes")
        references.append({**{k: row[k] for k in keys}, "file": f"{row['name']}.js", "png": f"{row['name']}.png"})
    index = {"description": description, "references": references}
    (out / "pool.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    revision = pool_revision(out)
    (out / REVISION).write_text(revision + "\n", encoding="utf-8")
    return revision


def references_from_dataset(dataset_dir: Path) -> list[Reference]:
    """The love and okay rows of a packed dataset as judge references (meh rows are not drawn)."""
    from datasets import load_from_disk

    dataset = load_from_disk(str(dataset_dir)).cast_column("image", _raw_image())
    return [
        Reference(
            name=row["name"],
            tier=row["tier"],
            subject=row["subject"],
            sketch=row["sketch"],
            png=row["image"]["bytes"],
            rated_by=row["rated_by"],
            notes=row["notes"] or "",
        )
        for row in dataset
        if row["tier"] in TIERS
    ]


def _raw_image() -> Any:
    from datasets import Image

    return Image(decode=False)  # the judge wants the PNG bytes as rendered, not a re-encoded PIL image
