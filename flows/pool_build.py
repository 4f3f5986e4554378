"""The `pool` flow's build: generate candidates, wait for a person's ratings, pack, calibrate, publish.

Sources (subjects, photos with attribution) → first drafts from one or more OpenAI-compatible models, one task
each, retried, a dead letter when a chain still fails → critique-and-revise rounds by a vision critic, one task per
candidate per round → every draft gated and rendered as it arrives → the rating step → a `datasets` pool packed at
a new revision under `pool_root/revisions/` → calibration (beat rates; unresolved comparisons left out) → the
revision published to a Hub dataset repository (when `hub` names one). Each stage leaves an artifact.

The rating step suspends the flow run (`suspend_flow_run` with a typed input): the process exits and the worker
is free while a person rates. The rating page (`watercolour pool rate FOLDER`) sends the ratings and resumes the
run through the Prefect API; the UI's Resume form takes the same input. A suspended run resumes by running the
flow again from the top, so everything before the rating step is persisted: the drafts' tasks come back Cached,
and `generated.json` in the folder says generation is done. A run left waiting past `rating_timeout_s` is failed
by the server ("paused and never resumed"); every rating is already on disk, and a new run with
`candidates=FOLDER` packs them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect import flow, runtime
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.flow_runs import suspend_flow_run

from ground.files import write_atomic
from ground.reference_pool import BUNDLED_POOL, TIERS
from rewards.judging.settings import JudgeSettings
from tasks.pool_build import GENERATED, calibrate_revision, generate_candidates, pack_revision, publish_revision
from watercolour.pool.candidates import (
    AWAITING,
    Awaiting,
    RatingsSubmitted,
    merge_submitted,
    read_candidates,
)
from watercolour.pool.generate import GenerateSettings, load_photos
from watercolour.pool.publish import PoolHubSettings
from watercolour.run_records.gallery import GalleryItem, write_gallery


WEEK_S = 7 * 24 * 3600


def candidate_folder(pool_root: Path, candidates: str | None) -> Path:
    """The folder named, or one of this flow run's own under `pool_root/candidates/`."""
    return Path(candidates) if candidates else pool_root / "candidates" / str(runtime.flow_run.name)


def candidates_artifacts(folder: Path, summary: dict[str, Any]) -> Path:
    """Counts, the candidates table and a gallery of them; the gallery's path."""
    made = read_candidates(folder)
    letters = summary.get("dead_letters", [])
    counts = [
        {"stage": "drafted", "count": sum(c.round == 0 for c in made)},
        {"stage": "revised", "count": sum(c.round > 0 for c in made)},
        {"stage": "passed the gate", "count": sum(c.passed for c in made)},
        {"stage": "dead letters", "count": len(letters)},
    ]
    create_table_artifact(counts, key="pool-counts", description=f"Candidates in {folder}")
    rows = [
        {"id": c.id, "model": c.model, "subject": c.subject, "round": c.round, "passed": c.passed,
         "coverage": c.coverage, "violations": ", ".join(c.violations), "photo": c.attribution or ""}
        for c in made
    ]  # fmt: skip
    create_table_artifact(rows, key="pool-candidates", description="Every candidate, gated as it arrived")
    if letters:
        create_table_artifact(
            [
                {"model": x["model"], "endpoint": x["endpoint"], "stage": x["stage"], "cause": x["cause"]}
                for x in letters
            ],
            key="pool-dead-letters",
            description="Chains given up after their retries",
        )
    items = [
        GalleryItem(image=f"../{c.png}" if c.png else None, title=f"{c.id}: {c.subject}", tier=None,
                    violations=c.violations, preset=c.model)
        for c in made
    ]  # fmt: skip
    gallery = write_gallery(items, folder / "gallery", f"Pool candidates: {folder.name}")
    create_link_artifact(gallery.resolve().as_uri(), link_text="candidates gallery", key="pool-gallery")
    return gallery


def wait_for_ratings(folder: Path, timeout_s: int) -> RatingsSubmitted:
    """Suspend until the rating page (or the UI's Resume form) sends the ratings; the worker is free meanwhile."""
    awaiting = Awaiting(
        flow_run_id=str(runtime.flow_run.id), flow_run_name=str(runtime.flow_run.name), timeout_s=timeout_s
    )
    write_atomic(folder / AWAITING, awaiting.model_dump_json().encode())
    create_markdown_artifact(
        f"## Rate the candidates\n\n`watercolour pool rate {folder}` opens the rating page; press Enter there when "
        f"done, and it resumes this flow run. Or resume it from this page's **Resume** form (ratings saved in "
        f"`{folder}/ratings.json` are taken as they are). It waits {timeout_s} s.",
        key="pool-rating",
    )
    print(f"waiting for ratings: run `watercolour pool rate {folder}`, then press Enter on the page")
    submitted = suspend_flow_run(wait_for_input=RatingsSubmitted, timeout=timeout_s, key="ratings")
    assert submitted is not None  # suspend_flow_run returns only once resumed, with the input
    (folder / AWAITING).unlink(missing_ok=True)
    return submitted


def calibration_paintings(folder: Path, paintings: str | None) -> list[Path]:
    """The paintings named, else the candidates that did not become references (the pool's own rungs below),
    else the bundled seed pool's renders."""
    from watercolour.pool.calibrate import find_paintings
    from watercolour.pool.candidates import read_ratings

    if paintings:
        return find_paintings(paintings)
    tiers = read_ratings(folder).tiers
    below = [folder / c.png for c in read_candidates(folder) if c.png and c.passed and tiers.get(c.id) not in TIERS]
    return below or sorted(BUNDLED_POOL.glob("*.png"))


@flow(name="pool", log_prints=True, persist_result=True)
def build_pool(
    generate: GenerateSettings | None = None,
    photos: str | None = None,
    candidates: str | None = None,
    pool_root: str = "data/pool",
    rating_timeout_s: int = WEEK_S,
    paintings: str | None = None,
    calibrate_k: int = 16,
    judge: JudgeSettings | None = None,
    hub: PoolHubSettings | None = None,
) -> dict[str, Any]:
    """Build a pool revision end to end, with a person's ratings in the middle.

    Args: generate: Models, subjects, rounds and critic for new candidates (omit to rate an existing folder). photos:
    Folder of reference photos with attribution.json, shown to the first drafts. candidates: An existing candidate
    folder (a refresh's queue, or a run that timed out waiting): not generated again. pool_root: Where candidate
    folders and packed revisions live. rating_timeout_s: How long the run waits for ratings before the server fails it
    (ratings stay on disk). paintings: Policy paintings to calibrate against (folder or glob); default: the candidates
    rated below okay. calibrate_k: Paintings sampled for calibration. judge: The judge that calibrates (default: the
    offline judge). hub: Publish the revision to this Hub dataset repository.
    """
    from rewards.scoring.engine_thread import close_engine_thread

    root = Path(pool_root)
    folder = candidate_folder(root, candidates)
    generated = folder / GENERATED
    if generated.is_file():
        summary = json.loads(generated.read_text(encoding="utf-8"))
    elif generate is None:
        raise ValueError(f"nothing to rate in {folder}: pass generate settings, or candidates=<a generated folder>")
    else:
        # Prefect's task retries are the retries here; the client's own would multiply them.
        settings = generate.model_copy(update={"attempts": 1})
        try:
            summary = generate_candidates(settings, folder, load_photos(Path(photos)) if photos else [])
        finally:
            close_engine_thread()
    print(
        f"{summary['passed']} of {summary['candidates']} candidates passed; {len(summary['dead_letters'])} dead letters"
    )
    gallery = candidates_artifacts(folder, summary)

    submitted = wait_for_ratings(folder, rating_timeout_s)
    ratings = merge_submitted(folder, submitted)
    print(f"{len(ratings.tiers)} candidates rated")

    revision, pool_dir = pack_revision(folder, root)
    report = calibrate_revision(
        pool_dir, calibration_paintings(folder, paintings), calibrate_k, judge or JudgeSettings(backend="offline")
    )
    create_table_artifact(
        [
            {k: row[k] for k in ("name", "tier", "win_rate", "resolved", "unresolved", "band")}
            for row in report["references"]
        ],
        key="pool-calibration",
        description=f"Revision {revision}: beat rates against {len(report['paintings'])} paintings ({report['judge']})",
    )
    published = publish_revision(pool_dir, hub) if hub is not None else None
    create_markdown_artifact(
        f"## Pool revision {revision}\n\nTrain on it with `watercolour train --preset PRESET pool_dir={pool_dir}`, or "
        f'`prefect deployment run train/PRESET -p overrides=\'{{"pool_dir": "{pool_dir}"}}\'` (with the '
        "preset's other overrides)." + (f"\n\nPublished: {published}" if published else ""),
        key="pool-revision",
    )
    return {
        "revision": revision,
        "pool_dir": str(pool_dir),
        "candidates": str(folder),
        "gallery": str(gallery),
        "generated": summary,
        "rated": len(ratings.tiers),
        "calibration": report["bands"],
        "published": published,
    }
