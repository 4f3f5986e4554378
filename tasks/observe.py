"""What a person watching the Prefect UI sees of a training run: progress, each step's rewards, its best painting.

`StepReporter` is an `on_scored` hook (the composite reward's and the fanned reward's), chained in front of the
rollout store's: after each step's batch it updates the run's progress artifact, publishes a table of every
rollout's reward and parts, a markdown card with the step's best rollout and all its paintings on a contact sheet
embedded in the artifact (the UI cannot open files on the training machine), and a table of that step's dead
letters when there are any. Each step also logs one summary line in the flow's logs (`tasks.training`).

Artifact keys are per flow run (`<run name>-<flow-run name>-<what>`), so two runs of a deployment publish under two
sets of keys and each run's history reads as the versions of a few keys. A retry keeps its flow run, and a resume
from checkpoint-N trains the steps after N again: `forget_replayed` deletes what the earlier attempt published of
those steps (and the run's progress and pool card, published again), so each step is listed once per flow run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect import runtime
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from ground.records import DeadLetter, RewardParts, rollout_step
from rewards.scoring.composite import OnScored
from rewards.scoring.terms import term_names
from watercolour.run_records.contact_sheet import contact_sheet, data_url


# A step's artifacts say their step first; `forget_replayed` reads it back. Prefect artifacts carry no metadata.
STEP_DESCRIPTION = re.compile(r"Step (\d+):")


def artifact_key(run_name: str, what: str) -> str:
    """Prefect keys allow lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]+", "-", f"{run_name}-{what}".lower()).strip("-")


def flow_run_artifacts(run_name: str) -> str:
    """What this flow run's artifact keys start with: the run's name and the flow run's (two runs, two sets)."""
    return f"{run_name}-{runtime.flow_run.name}"


def forget_replayed(flow_run_id: UUID, kept_steps: int) -> int:
    """Delete this flow run's artifacts that its resumed attempt publishes again: every step's after `kept_steps`
    (a resume from checkpoint-N trains them again) and those of no step (progress, the pool card); return how many.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    # Keyed ones only: Prefect's own (a result's, keyless) are not ours to delete.
    ours = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]), key=ArtifactFilterKey(exists_=True))
    replayed: list[UUID] = []
    with get_client(sync_client=True) as client:
        # Read every page before deleting: a delete shifts the offsets of the pages after it.
        page_size, offset = 200, 0
        while page := client.read_artifacts(artifact_filter=ours, limit=page_size, offset=offset):
            for artifact in page:
                step = STEP_DESCRIPTION.match(artifact.description or "")
                if step is None or int(step[1]) > kept_steps:
                    replayed.append(artifact.id)
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


def dead_letter_rows(letters: list[DeadLetter]) -> list[dict[str, Any]]:
    return [
        {"stage": letter.stage, "cause": letter.cause[:300], "sketch": letter.sketch_hash, "attempts": letter.attempts}
        for letter in letters
    ]


class StepReporter:
    """Publishes one step's artifacts, then hands the batch on to `then` (the rollout store)."""

    def __init__(self, run_name: str, run_dir: Path, total_steps: int, then: OnScored | None = None) -> None:
        self.run_name, self.run_dir, self.total_steps, self.then = run_name, Path(run_dir), total_steps, then
        progress_id = create_progress_artifact(
            0.0, key=artifact_key(run_name, "progress"), description=f"Training steps of run {run_name}"
        )
        assert isinstance(progress_id, UUID), "created from sync code, so not a coroutine"
        self.progress_id = progress_id

    def __call__(self, prompts: list[Any], completions: list[Any], parts: list[RewardParts], kwargs: dict) -> None:
        step = rollout_step(kwargs.get("trainer_state")) or 1
        if self.then is not None:
            self.then(prompts, completions, parts, kwargs)
        self.report(step, parts)

    def report(self, step: int, parts: list[RewardParts]) -> None:
        create_table_artifact(
            reward_rows(parts), key=artifact_key(self.run_name, "step-rewards"), description=f"Step {step}: rewards"
        )
        letters = [part.dead_letter for part in parts if part.dead_letter is not None]
        if letters:
            create_table_artifact(
                dead_letter_rows(letters),
                key=artifact_key(self.run_name, "dead-letters"),
                description=f"Step {step}: rollouts whose reward is None after their retries",
            )
        create_markdown_artifact(
            self.best_painting(step, parts),
            key=artifact_key(self.run_name, "best-painting"),
            description=f"Step {step}: the best rollout and the step's paintings",
        )
        update_progress_artifact(self.progress_id, min(100.0, 100.0 * step / self.total_steps))

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
