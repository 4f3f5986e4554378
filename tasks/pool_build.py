"""The `pool` flow's tasks: one first draft, one critique-and-revise round, pack, calibrate, publish.

Each wraps a step of `watercolour.pool` (the same code `watercolour pool ...` runs). Results are persisted
under the DEFAULT cache policy (inputs, task source, flow run id): a flow run suspended for ratings is re-run from
the top when it resumes, and every step before the rating comes back Cached instead of calling the models again.
Drafts and rounds render on the process's one browser pool (`rewards.scoring.engine_thread`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import DEFAULT

from ground.records import DeadLetter
from rewards.scoring.dead_letters import DeadLetterLog
from rewards.scoring.engine_thread import engine_thread
from watercolour.pool.candidates import Candidate
from watercolour.pool.generate import POOL_RENDER, GenerateSettings, Generator, Photo


# Connection refused or a 5xx: a couple of retries spaced out, then the chain is a dead letter.
GENERATE_RETRIES = 2
GENERATE_RETRY_DELAYS: list[float] = [2, 8]


def candidate_name(pair: int, number: int, round_number: int) -> str:
    """A name fixed by the chain's place, so a retried task rewrites its own files instead of adding new ones."""
    return f"cand_{pair}_{number:03d}_r{round_number}"


Step = Callable[[Generator], Awaitable[tuple[Candidate, bytes | None]]]


def _with_generator(settings: GenerateSettings, folder: Path, photos: list[Photo], step: Step) -> Candidate:
    """Run one generation step on the process's engine loop, with a generator of its own (clients closed after)."""

    async def run() -> Candidate:
        generator = Generator(settings, folder, await engine_thread().browser_pool(POOL_RENDER), photos)
        try:
            candidate, _ = await step(generator)
        finally:
            await generator.aclose()
        return candidate

    return engine_thread().run(run())


@task(
    task_run_name="draft-{pair}-{number}",
    retries=GENERATE_RETRIES,
    retry_delay_seconds=GENERATE_RETRY_DELAYS,
    persist_result=True,
    cache_policy=DEFAULT,
)
def draft_candidate(
    settings: GenerateSettings, folder: Path, photos: list[Photo], pair: int, number: int
) -> Candidate:
    """Chain `number` of model pair `pair`: its first draft, gated and rendered, appended to candidates.jsonl."""
    model, url = settings.model_endpoints()[pair]
    return _with_generator(
        settings,
        folder,
        photos,
        lambda generator: generator.first_draft(model, url, number, candidate_name(pair, number, 0)),
    )


@task(
    task_run_name="revise-{parent.id}",
    retries=GENERATE_RETRIES,
    retry_delay_seconds=GENERATE_RETRY_DELAYS,
    persist_result=True,
    cache_policy=DEFAULT,
)
def revise_candidate(settings: GenerateSettings, folder: Path, photos: list[Photo], parent: Candidate) -> Candidate:
    """One critique-and-revise round: the critic's word on `parent`, then the writer's revision of it."""
    assert parent.png is not None, "only a rendered candidate is revised"
    png = (folder / parent.png).read_bytes()
    pair, number = (int(part) for part in parent.id.split("_")[1:3])
    name = candidate_name(pair, number, parent.round + 1)
    return _with_generator(settings, folder, photos, lambda generator: generator.next_round(parent, png, name))


def dead_letter(folder: Path, stage: str, error: BaseException) -> DeadLetter:
    """Record a chain given up after its retries in the candidate folder's dead-letter file."""
    letter = DeadLetter(stage=stage, cause=str(error), attempts=1 + GENERATE_RETRIES, at=time.time())
    DeadLetterLog(folder).append(letter)
    return letter


# log_prints off: datasets' fingerprinting prints a disassembly on save, which the flow's log_prints would turn
# into a dozen INFO lines (as it did for the training task).
@task(persist_result=True, cache_policy=DEFAULT, log_prints=False)
def pack_revision(folder: Path, pool_root: Path) -> tuple[str, Path]:
    """Pack the rated candidates into `pool_root/revisions/<revision>` (never rewritten: a run that trains on a
    revision keeps it), and point `pool_root/LATEST` at it."""
    import shutil
    import tempfile

    from ground.files import write_atomic
    from watercolour.pool.pack import candidate_rows, write_pool

    revisions = pool_root / "revisions"
    revisions.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".packing-", dir=revisions))
    revision = write_pool(candidate_rows(folder), staging, f"Candidates from {folder.name}, rated by a person.")
    target = revisions / revision
    if target.exists():  # the same ratings packed before: same content, same revision
        shutil.rmtree(staging)
    else:
        staging.rename(target)
    write_atomic(pool_root / "LATEST", f"{revision}\n".encode())
    return revision, target


@task(persist_result=True, cache_policy=DEFAULT)
def calibrate_revision(pool_dir: Path, paintings: list[Path], k: int, judge: Any) -> dict[str, Any]:
    """Beat rates of `paintings` against each reference (unresolved comparisons left out); written next to it."""
    import asyncio

    from watercolour.pool.calibrate import calibrate, write_report

    report = asyncio.run(calibrate(pool_dir, paintings, k, judge))
    write_report(report, pool_dir / "calibration.json")
    return report


@task(retries=2, retry_delay_seconds=[5, 30])
def publish_revision(pool_dir: Path, hub: Any) -> str:
    from watercolour.pool.publish import publish_pool

    return publish_pool(pool_dir, hub)


GENERATED = "generated.json"


def generate_candidates(settings: GenerateSettings, folder: Path, photos: list[Photo]) -> dict[str, Any]:
    """Inside a flow: every first draft as a task, then each critique-and-revise round as a task per candidate.

    A chain whose task failed after its retries is a dead letter (in the folder's dead-letter file and the
    summary), and the others go on. The summary is written to `folder/generated.json`: a flow run resumed after
    its rating step finds it and does not generate again.
    """
    import json

    from ground.files import write_atomic

    folder.mkdir(parents=True, exist_ok=True)
    pairs = settings.model_endpoints()
    chains = [(pair, number) for pair in range(len(pairs)) for number in range(settings.per_model)]
    futures = draft_candidate.map(
        [settings] * len(chains), [folder] * len(chains), [photos] * len(chains), *map(list, zip(*chains, strict=True))
    )
    letters: list[dict[str, Any]] = []
    made: list[Candidate] = []
    latest: list[Candidate] = []
    for (pair, _), outcome in zip(chains, futures.result(raise_on_failure=False), strict=True):
        if isinstance(outcome, BaseException):
            model, url = pairs[pair]
            letters.append(
                {"model": model, "endpoint": url, **dead_letter(folder, f"generate {model}", outcome).model_dump()}
            )
        else:
            latest.append(outcome)
    made += latest
    critic = settings.critic_url and settings.critic_model
    for _ in range(settings.rounds if critic else 0):
        parents = [candidate for candidate in latest if candidate.png is not None]
        if not parents:
            break
        futures = revise_candidate.map(
            [settings] * len(parents), [folder] * len(parents), [photos] * len(parents), parents
        )
        latest = []
        for parent, outcome in zip(parents, futures.result(raise_on_failure=False), strict=True):
            if isinstance(outcome, BaseException):
                letter = dead_letter(folder, f"revise {parent.id}", outcome)
                letters.append({"model": parent.model, "endpoint": parent.endpoint, **letter.model_dump()})
            else:
                latest.append(outcome)
        made += latest
    summary = {
        "candidates": len(made),
        "passed": sum(candidate.passed for candidate in made),
        "rounds": max((candidate.round for candidate in made), default=0),
        "dead_letters": letters,
    }
    write_atomic(folder / GENERATED, json.dumps(summary, indent=1).encode())
    return summary
