"""The rollout store: every rollout of a run, one parquet shard per optimizer step, written once and atomically.

Layout under the run directory:

    rollouts/step-00003.parquet        one row per rollout of step 3 (step, group, index, the weights it was sampled
                                       with, prompt, subject, completion, sketch, png path, reward and every
                                       registered term, whether the painting shows its subject's colours,
                                       violations, dead letter, timings)
    rollouts/png/3/<group>_<index>.png the rendered painting, referenced from the row by its run-relative path

Steps are numbered like TRL's logs and checkpoints: the rollouts scored while `global_step` was 2 are the ones
step 3's update learns from, so they live in `step-00003`. A shard is written to a temporary name and renamed,
so a crash leaves either the whole step or nothing; `truncate` drops the steps a resume will redo. `sampled_at` is
the optimizer steps the weights had had when the rollout began: `step - 1` for a synchronous run, as little as
`step - 1 - max_staleness` for pipelined rollouts (`watercolour.pipeline.rollouts`), which hand it in per
rollout. The store reads as one table with `datasets.load_dataset("parquet", data_files=store.data_files())`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from ground.records import RewardParts, rollout_step
from rewards.length import completion_text
from rewards.scoring.terms import term_names
from rewards.subject_match import subject_match
from watercolour.run_records.curves import rollout_summary
from watercolour.run_records.gallery import GalleryItem


ROLLOUTS_DIR = "rollouts"
SHARD_PREFIX = "step-"


def shard_schema() -> Any:
    """The shards' arrow schema, spelled out: a step in which, say, no rollout rendered would otherwise infer a
    null-typed `png` column, and datasets refuses to load shards whose schemas disagree."""
    import pyarrow as pa

    count, number, text = pa.int64(), pa.float64(), pa.string()
    columns = {
        **dict.fromkeys(("step", "group", "index", "sampled_at"), count),
        **dict.fromkeys(
            ("preset", "pool_revision", "prompt", "subject", "completion", "sketch", "sketch_hash", "png"), text
        ),
        **dict.fromkeys(("reward", *term_names()), number),
        "passed": pa.bool_(),
        "on_subject": pa.bool_(),
        "violations": pa.list_(text),
        **dict.fromkeys(("coverage", "render_ms"), number),
        **dict.fromkeys(("dead_letter", "timings_ms", "parts"), text),
        # Repaint episodes: one row per painting; None for single-turn rollouts.
        "turn": count,
        "observation": text,
        "episode_reward": number,
    }
    return pa.schema(list(columns.items()))


def shard_name(step: int) -> str:
    return f"{SHARD_PREFIX}{step:05d}.parquet"


class RolloutStore:
    """Appends each step's scored rollouts; its `record_batch` is the composite reward's `on_scored` hook.

    Holds only paths and numbers, so it pickles with the reward function that carries it.
    """

    def __init__(
        self, run_dir: Path, num_generations: int, preset: str = "", pool_revision: str | None = None
    ) -> None:
        self.run_dir = Path(run_dir)
        self.root = self.run_dir / ROLLOUTS_DIR
        self.num_generations = num_generations
        self.preset = preset
        self.pool_revision = pool_revision

    # ------------------------------------------------------------------ writing

    def record_batch(
        self, prompts: list[Any], completions: list[Any], parts: list[RewardParts], kwargs: dict[str, Any]
    ) -> None:
        """Write one step's rollouts (PNGs first, then the shard that points at them) and log their summary."""
        step = rollout_step(kwargs.get("trainer_state"))
        if step is None:
            step = self.next_step()
        # The dataset's `subject` column, one per rollout (absent when the caller has none).
        subjects = list(kwargs.get("subject") or [None] * len(parts))
        sampled = sampled_at(kwargs, step, len(parts))
        rows = [
            self._row(step, position, *rollout)
            for position, rollout in enumerate(zip(prompts, completions, parts, subjects, sampled, strict=True))
        ]
        self._write_shard(step, rows)
        if "log_metric" in kwargs:
            for name, value in rollout_summary(rows).items():
                if value is not None:
                    kwargs["log_metric"](name, value)

    def record_episodes(
        self, prompts: list[Any], completions: list[Any], environments: list[Any], kwargs: dict[str, Any]
    ) -> None:
        """Write one step's repaint episodes (`episodes.painting_env.PaintingEnv`): a row per painting, with its
        observation and the episode's reward; an episode that never painted is one row without a turn."""
        step = rollout_step(kwargs.get("trainer_state"))
        if step is None:
            step = self.next_step()
        rows, finals = [], []
        subjects = list(kwargs.get("subject") or [None] * len(prompts))
        sampled = sampled_at(kwargs, step, len(prompts))
        for position, (prompt, completion, env) in enumerate(zip(prompts, completions, environments, strict=True)):
            turns = env.turns
            subject = subjects[position]
            if not turns:
                parts = RewardParts(reward=env.reward, terms={"gate": 0.0})
                rows.append(
                    self._row(
                        step,
                        position,
                        prompt,
                        completion,
                        parts,
                        subject,
                        sampled[position],
                        episode_reward=env.reward,
                    )
                )
                finals.append(rows[-1])
            for number, turn in enumerate(turns, start=1):
                rows.append(
                    self._row(
                        step,
                        position,
                        prompt,
                        turn.sketch,
                        turn.parts,
                        subject,
                        sampled[position],
                        turn=number,
                        observation=turn.observation.text(),
                        episode_reward=env.reward,
                    )
                )
            if turns:
                finals.append(rows[-1])
        self._write_shard(step, rows)
        if "log_metric" in kwargs:
            for name, value in rollout_summary(finals).items():
                if value is not None:
                    kwargs["log_metric"](name, value)

    def _row(
        self,
        step: int,
        position: int,
        prompt: Any,
        completion: Any,
        parts: RewardParts,
        subject: str | None = None,
        sampled_at: int | None = None,
        turn: int | None = None,
        observation: str | None = None,
        episode_reward: float | None = None,
    ) -> dict[str, Any]:
        group, index = divmod(position, self.num_generations)
        verdict = parts.verdict
        render = verdict.render if verdict is not None else None
        png_path = None
        if render is not None and render.png is not None:
            name = f"{group}_{index}.png" if turn is None else f"{group}_{index}_turn{turn}.png"
            relative = Path(ROLLOUTS_DIR) / "png" / str(step) / name
            (self.run_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            (self.run_dir / relative).write_bytes(render.png)
            png_path = relative.as_posix()
        # Whatever the backends: does the painting show its subject's colours (no painting: it does not)?
        on_subject = None
        if subject is not None:
            on_subject = (
                render is not None and render.png is not None and subject_match(render.png, subject).on_subject
            )
        return {
            "step": step,
            "group": group,
            "index": index,
            "sampled_at": sampled_at,
            "preset": self.preset,
            "pool_revision": self.pool_revision,
            "prompt": prompt if isinstance(prompt, str) else json.dumps(prompt),
            "subject": subject,
            "completion": completion_text(completion),
            "sketch": verdict.sketch if verdict is not None else None,
            "sketch_hash": verdict.sketch_hash if verdict is not None else None,
            "png": png_path,
            "reward": parts.reward,
            **{name: parts.term(name) for name in term_names()},
            "passed": verdict.passed if verdict is not None else False,
            "on_subject": on_subject,
            "violations": list(verdict.violations) if verdict is not None else [],
            "coverage": render.coverage if render is not None else None,
            "render_ms": render.render_ms if render is not None else None,
            "dead_letter": parts.dead_letter.model_dump_json() if parts.dead_letter is not None else None,
            "timings_ms": json.dumps(parts.timings_ms),
            # Everything else (weights, backends, the verdict's details, the judge's comparisons), minus PNG bytes.
            "parts": parts.model_dump_json(exclude={"verdict": {"render": {"png"}}}),
            "turn": turn,
            "observation": observation,
            "episode_reward": episode_reward,
        }

    def _write_shard(self, step: int, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self.root / shard_name(step)
        if path.exists():
            raise FileExistsError(f"{path} already holds step {step}: a step is recorded once (truncate on resume)")
        self.root.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".parquet.partial")
        pq.write_table(pa.Table.from_pylist(rows, schema=shard_schema()), partial)
        os.replace(partial, path)

    # ------------------------------------------------------------------ reading and resuming

    def steps(self) -> list[int]:
        """The steps with a complete shard, in order."""
        if not self.root.is_dir():
            return []
        return sorted(int(path.stem.removeprefix(SHARD_PREFIX)) for path in self.root.glob(f"{SHARD_PREFIX}*.parquet"))

    def next_step(self) -> int:
        steps = self.steps()
        return steps[-1] + 1 if steps else 1

    def data_files(self) -> list[str]:
        return [str(self.root / shard_name(step)) for step in self.steps()]

    def step(self, step: int) -> tuple[list[Any], list[str], list[RewardParts]]:
        """One stored step as its scorer handed it on: prompts, completions and parts, each with its PNG again."""
        import pyarrow.parquet as pq

        rows = pq.read_table(self.root / shard_name(step)).to_pylist()
        parts = []
        for row in rows:
            part = RewardParts.model_validate_json(row["parts"])
            render = part.verdict.render if part.verdict is not None else None
            if render is not None and row["png"]:
                render.png = (self.run_dir / row["png"]).read_bytes()
            parts.append(part)
        return [row["prompt"] for row in rows], [row["completion"] for row in rows], parts

    def rows(self) -> list[dict[str, Any]]:
        """Every stored rollout as a dict, in step order (a run holds hundreds to a few thousand)."""
        import pyarrow.parquet as pq

        return [row for path in self.data_files() for row in pq.read_table(path).to_pylist()]

    def truncate(self, after_step: int) -> None:
        """Forget steps after `after_step` (and half-written shards), so a resumed run records them once."""
        for step in self.steps():
            if step > after_step:
                (self.root / shard_name(step)).unlink()
        for partial in self.root.glob("*.partial") if self.root.is_dir() else []:
            partial.unlink()
        png_root = self.root / "png"
        if png_root.is_dir():
            for folder in png_root.iterdir():
                if folder.name.isdigit() and int(folder.name) > after_step:
                    shutil.rmtree(folder)


def sampled_at(kwargs: dict[str, Any], step: int, count: int) -> list[int]:
    """The weights' optimizer steps each rollout began with: handed in by pipelined rollouts, else the step's own
    (its rows were sampled by the weights of the step before)."""
    return [int(value) for value in kwargs.get("sampled_at") or [step - 1] * count]


def gallery_items(rows: list[dict[str, Any]], gallery_dir: Path, run_dir: Path) -> list[GalleryItem]:
    """Every rollout as a gallery card: its painting (by a path into the store) or, when the gate refused it before
    rendering, its violations and the text the policy wrote, so a failed step can be read too. A repaint episode is
    one card holding its paintings side by side, each with the observation the policy read."""
    items: list[GalleryItem] = []
    episodes: dict[tuple[int, int, int], GalleryItem] = {}
    for row in rows:
        card = _card(row, gallery_dir, run_dir)
        if row.get("turn") is None:
            items.append(card)
            continue
        key = (row["step"], row["group"], row["index"])
        if key not in episodes:
            # Copies share lists: the episode gets lists of its own, or it would hold itself.
            episode: dict[str, Any] = {"image": None, "sketch": "", "violations": [], "parts": {}, "turns": []}
            episodes[key] = card.model_copy(update={**episode, "reward": row["episode_reward"]})
            items.append(episodes[key])
        episodes[key].turns.append(
            card.model_copy(update={"title": f"turn {row['turn']}", "note": row["observation"]})
        )
    return items


def _card(row: dict[str, Any], gallery_dir: Path, run_dir: Path) -> GalleryItem:
    image = Path(os.path.relpath(run_dir / row["png"], gallery_dir)).as_posix() if row["png"] else None
    return GalleryItem(
        image=image,
        title=f"step {row['step']} · group {row['group']} · #{row['index']}",
        sketch=row["sketch"] or row["completion"] or "",
        reward=row["reward"],
        parts={name: row.get(name) for name in (*term_names(), "coverage")},
        step=row["step"],
        preset=row["preset"],
        violations=row["violations"],
    )
