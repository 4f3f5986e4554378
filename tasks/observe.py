"""What a person watching the Prefect UI sees of a training run: its progress, every step in order, the latest step.

`StepReporter` is the reward adapter's `on_scored` hook, chained in front of the rollout store's. After each step's
batch it updates, in place, one artifact of each kind:

- `progress`: the share of steps done, with the time left at the pace of the measured steps
  (`watercolour.rehearsal.projection.eta_s`);
- `steps`: a table of every step so far, in order (reward, best, gate, on subject, dead letters), read from the
  rollout store, which a resume truncates, so a replayed step is listed once;
- `step-rewards`: the latest step's rollouts, each reward and its parts, with what each column means;
- `best-painting`: the latest step's best rollout and all its paintings on a contact sheet embedded in the artifact
  (the UI cannot open files on the training machine);
- `dead-letters`: the latest step that had any, each with its cause.

In place, because Prefect lists a flow run's artifacts in the order of their random ids: one artifact a step read as
a shuffled deck. Each step also logs one summary line in the flow's logs (`tasks.training`).

The artifacts are published off the step's path, by one thread of the reporter's own, in the order of the steps: the
rollout store is written inside the reward's call, the artifacts after it returns, so the update does not wait for
them (docs/orchestration.md, "What you see in the UI", has what that saved). A publish that fails is logged and the
run goes on; `close` waits for the steps already handed over, and the training task calls it before it returns.

Artifact keys are per flow run (`<run name>-<flow-run name>-<what>`), so two runs of a deployment publish under two
sets of keys. A retry keeps its flow run and publishes all of them again: `forget_replayed` deletes what the
earlier attempt published first.
"""

from __future__ import annotations

import contextvars
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import fmean
from typing import Any
from uuid import UUID

from prefect import get_run_logger, runtime
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from ground.records import DeadLetter, RewardParts, rollout_step
from rewards.scoring.composite import OnScored
from rewards.scoring.terms import reward_terms, term_names
from watercolour.run_records.contact_sheet import contact_sheet, data_url


def artifact_key(run_name: str, what: str) -> str:
    """Prefect keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]+", "-", f"{run_name}-{what}".lower()).strip("-")


def flow_run_artifacts(run_name: str) -> str:
    """What this flow run's artifact keys start with: the run's name and the flow run's (two runs, two sets)."""
    return f"{run_name}-{runtime.flow_run.name}"


def forget_replayed(flow_run_id: UUID) -> int:
    """Delete this flow run's keyed artifacts, which its retried attempt publishes again; return how many."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    # Keyed ones only: Prefect's own (a result's, keyless) are not ours to delete.
    ours = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]), key=ArtifactFilterKey(exists_=True))
    replayed: list[UUID] = []
    with get_client(sync_client=True) as client:
        # Read every page before deleting: a delete shifts the offsets of the pages after it.
        page_size, offset = 200, 0
        while page := client.read_artifacts(artifact_filter=ours, limit=page_size, offset=offset):
            replayed += [artifact.id for artifact in page]
            offset += page_size
        for artifact_id in replayed:
            client.delete_artifact(artifact_id)
    return len(replayed)


def reward_rows(parts: list[RewardParts]) -> list[dict[str, Any]]:
    def fixed(value: float | None) -> float | None:
        return None if value is None else round(value, 4)

    return [
        {
            "rollout": index,
            "reward": fixed(part.reward),
            **{name: fixed(part.term(name)) for name in term_names()},
            "violations": ", ".join(part.verdict.violations) if part.verdict else "",
            "dead_letter": f"{part.dead_letter.stage}: {part.dead_letter.cause}"[:200] if part.dead_letter else "",
        }
        for index, part in enumerate(parts)
    ]


def columns_explained(parts: list[RewardParts]) -> str:
    """What the step table's columns mean: the reward as the weighted sum, and what each term measures."""
    weights = next((part.weights for part in parts if part.weights), {})
    terms = list(reward_terms().values())
    summed = " + ".join(f"{weights.get(term.name, 0.0):g} x {term.name}" for term in terms)
    measured = "; ".join(f"`{term.name}`: {term.measures}" for term in terms)
    return f"`reward` = {summed} (0 when the gate refuses, empty for a dead letter). Each term's column: {measured}."


def dead_letter_rows(letters: list[DeadLetter]) -> list[dict[str, Any]]:
    return [
        {"stage": letter.stage, "cause": letter.cause[:300], "sketch": letter.sketch_hash, "attempts": letter.attempts}
        for letter in letters
    ]


class Pinned:
    """One artifact of a run, published once and then updated in place."""

    def __init__(self, key: str, kind: str) -> None:
        self.key, self.kind = key, kind
        self.id: UUID | None = None

    def publish(self, data: Any, description: str) -> None:
        if self.id is None:
            create = create_table_artifact if self.kind == "table" else create_markdown_artifact
            made = create(data, key=self.key, description=description)
            assert isinstance(made, UUID), "created from sync code, so not a coroutine"
            self.id = made
            return
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import ArtifactUpdate

        stored = json.dumps(data) if self.kind == "table" else data  # as the create functions store them
        with get_client(sync_client=True) as client:
            client.update_artifact(self.id, ArtifactUpdate(data=stored, description=description))


class StepReporter:
    """Hands a step's batch on to `then` (the rollout store), then has its artifacts published (in place: one of each
    kind per run) by the reporter's own thread, after the call returns."""

    def __init__(self, run_name: str, run_dir: Path, total_steps: int, then: OnScored | None = None) -> None:
        self.run_name, self.run_dir, self.total_steps, self.then = run_name, Path(run_dir), total_steps, then
        progress_id = create_progress_artifact(
            0.0, key=artifact_key(run_name, "progress"), description=f"Training steps of run {run_name}"
        )
        assert isinstance(progress_id, UUID), "created from sync code, so not a coroutine"
        self.progress_id = progress_id
        # The steps this reporter saw, for a run whose store is elsewhere (or not written yet).
        self.reported: dict[int, list[dict[str, Any]]] = {}
        self.steps, self.rewards, self.card, self.letters = (
            Pinned(artifact_key(run_name, what), kind)
            for what, kind in (("steps", "markdown"), ("step-rewards", "table"), ("best-painting", "markdown"),
                               ("dead-letters", "table"))
        )  # fmt: skip
        # One thread: the steps publish in the order they were scored.
        self.publisher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="step-artifacts")

    def __call__(self, prompts: list[Any], completions: list[Any], parts: list[RewardParts], kwargs: dict) -> None:
        step = rollout_step(kwargs.get("trainer_state")) or 1
        if self.then is not None:
            self.then(prompts, completions, parts, kwargs)
        # With the Prefect context of the call: the artifacts belong to this flow run and its training task.
        self.publisher.submit(contextvars.copy_context().run, self.report_or_log, step, parts)

    def close(self) -> None:
        """Wait until every step handed over so far is published."""
        self.publisher.shutdown(wait=True)

    def report_or_log(self, step: int, parts: list[RewardParts]) -> None:
        try:
            self.report(step, parts)
        except Exception as error:  # what a person watches must not stop the training it watches
            cause = f"{type(error).__name__}: {error}".splitlines()[0][:300]
            get_run_logger().warning(f"step {step}'s artifacts were not published ({cause}); the run goes on")

    def report(self, step: int, parts: list[RewardParts]) -> None:
        self.rewards.publish(reward_rows(parts), f"Step {step}: rewards. {columns_explained(parts)}")
        letters = [part.dead_letter for part in parts if part.dead_letter is not None]
        if letters:
            self.letters.publish(
                dead_letter_rows(letters), f"Step {step}: rollouts whose reward is None after their retries"
            )
        self.card.publish(self.best_painting(step, parts), f"Step {step}: the best rollout and the step's paintings")
        self.steps.publish(self.steps_table(step, parts), f"Steps 1 to {step} of {self.total_steps}, in order")
        update_progress_artifact(self.progress_id, min(100.0, 100.0 * step / self.total_steps), self.time_left(step))

    def steps_table(self, step: int, parts: list[RewardParts]) -> str:
        """Every step so far, one row each: the rollout store's steps, and those this reporter saw that it lacks."""
        from watercolour.run_records.rollout_store import RolloutStore

        self.reported[step] = [{"reward": p.reward, "passed": p.passed, "on_subject": None} for p in parts]
        by_step: dict[int, list[dict[str, Any]]] = dict(self.reported)
        stored: dict[int, list[dict[str, Any]]] = {}
        for row in RolloutStore(self.run_dir, num_generations=1).rows():
            stored.setdefault(row["step"], []).append(row)
        by_step.update(stored)  # what the store holds wins: it has each rollout's subject, and a resume cut it back
        lines = [
            "| step | reward mean | best | gate | on subject | dead letters |",
            "|---|---|---|---|---|---|",
        ]
        for number, rows in sorted(by_step.items()):
            rewards = [row["reward"] for row in rows if row["reward"] is not None]
            subjects = [row["on_subject"] for row in rows if row.get("on_subject") is not None]
            lines.append(
                f"| {number} | {fmean(rewards) if rewards else float('nan'):.3f} | {max(rewards, default=0.0):.3f} | "
                f"{sum(bool(row['passed']) for row in rows)}/{len(rows)} | "
                f"{f'{sum(subjects)}/{len(subjects)}' if subjects else '-'} | "
                f"{sum(row['reward'] is None for row in rows)} |"
            )
        return "\n".join(lines)

    def time_left(self, step: int) -> str:
        """The progress card's line: the step, and the time left at the pace of the measured steps."""
        from watercolour.rehearsal.projection import eta_s, from_curves
        from watercolour.run_records.curves import CurvesFile

        line = f"Step {step} of {self.total_steps} of run {self.run_name}"
        config = self.run_dir / "config.yaml"
        if not config.is_file():
            return line
        from ground.run_config import RunConfig

        training = RunConfig.load(config).training
        steps = from_curves(CurvesFile(self.run_dir).read(), training.num_generations, training.max_completion_length)
        left = eta_s(steps, self.total_steps, training.save_steps)
        return line if left is None else f"{line}; about {left / 3600:.1f} h left at the measured pace"

    def best_painting(self, step: int, parts: list[RewardParts]) -> str:
        """The step's card: the best rollout, and every painting of the step on one embedded contact sheet."""
        scored = [(part.reward, index, part) for index, part in enumerate(parts) if part.reward is not None]
        lines = [f"# Step {step} of {self.total_steps}", ""]
        if not scored:
            lines.append("No rollout of this step could be scored (see the dead letters).")
        else:
            reward, index, best = max(scored, key=lambda item: (item[0], -item[1]))
            lines.append(f"Best rollout: **#{index}**, reward **{reward:.3f}**.")
        paintings = [(f"#{index} {label(part)}", painting(part)) for index, part in enumerate(parts)]
        if any(png is not None for _, png in paintings):
            sheet = contact_sheet(paintings)
            lines += ["", f"![the paintings of step {step}]({data_url(sheet)})"]
        gallery = self.run_dir / "gallery" / "index.html"
        lines += ["", f"The run's gallery is written when it ends: `{gallery}` on the machine that trained."]
        return "\n".join(lines)


def painting(part: RewardParts) -> bytes | None:
    render = part.verdict.render if part.verdict is not None else None
    return render.png if render is not None else None


def label(part: RewardParts) -> str:
    if part.reward is None:
        return "dead letter"
    return f"{part.reward:.2f}" if part.passed or part.reward else "refused"
