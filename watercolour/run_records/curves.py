"""Per-step training curves: one CSV row per optimizer step, so the numbers outlive any dashboard.

A row is read off the metrics TRL logs each step, which already carry everything: TRL's own (`reward`,
`frac_reward_zero_std`, `step_time`), the composite reward's part means (`reward/*`, `dead_letters`), the
rollout store's summary (`rollouts/*`, from `rollout_summary`), the trainer's time split (`time/*`) and its peak
memory. The same metrics reach trackio through TRL, so the CSV and the dashboard cannot disagree.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from statistics import fmean, median
from typing import Any

from ground.files import write_atomic
from rewards.scoring.terms import reward_terms


CURVES_FILE = "curves.csv"
LOW_REWARD = 0.3

# CSV column -> the logged metric it is read from: the run's own, then one column per registered reward term (its
# batch mean, "reward/<term>"), then the counts and times. update_s is derived: the step's time less generate and
# score.
RUN_SOURCES = {
    "reward_mean": "reward",
    "reward_median": "rollouts/reward_median",
    "reward_best": "rollouts/reward_best",
    "reward_worst": "rollouts/reward_worst",
    "share_under_0_3": "rollouts/share_under_0.3",
    "frac_reward_zero_std": "frac_reward_zero_std",
    "coverage_mean": "rollouts/coverage_mean",
    "shapes_mean": "rollouts/shapes_mean",
    "on_subject_share": "rollouts/on_subject_share",
}
TAIL_SOURCES = {
    "dead_letters": "dead_letters",
    # The share of the step's completions scored ahead, during generation (early scoring).
    "prefetched": "scoring/prefetched",
    "generate_s": "time/generate_s",
    "score_s": "time/score_s",
    # Of the reward's wait, how long after generation the last painting scored ahead was ready (early scoring); the
    # rest of score_s is the reward call's own (the fan-out's tasks, the batch's gate readback).
    "ahead_tail_s": "time/ahead_tail_s",
    "step_s": "step_time",
    # What a projection of the run reads (`watercolour.rehearsal.projection`): the longest row (a batch decodes until
    # it ends), the completions' mean length, the tokens seen so far, the save after the step before, peak memory.
    "longest": "completions/max_length",
    "completion_mean": "completions/mean_length",
    "num_tokens": "num_tokens",
    "checkpoint_s": "time/checkpoint_s",
    "peak_gib": "memory/peak_gib",
    # Pipelined rollouts (`watercolour.pipeline.rollouts`): the decode steps the step's generation ran, the share of
    # its slots that held a row, the most updates a row of the step is behind the weights that train it, and the
    # least and mean of TRL's truncated importance ratios over its tokens, and the mean and largest gap between a
    # token's sampling-time log-probability and the trained weights' (nats). Empty for a synchronous run.
    "decode_steps": "pipeline/decode_steps",
    "decode_fill": "pipeline/fill",
    "behind_max": "pipeline/behind_max",
    "importance_min": "sampling/importance_sampling_ratio/min",
    "importance_mean": "sampling/importance_sampling_ratio/mean",
    "logp_gap_mean": "sampling/sampling_logp_difference/mean",
    "logp_gap_max": "sampling/sampling_logp_difference/max",
}


def sources() -> dict[str, str]:
    """Every column read off the logs, reward terms included (as registered when called)."""
    terms = {term.column: f"reward/{term.name}" for term in reward_terms().values()}
    return {**RUN_SOURCES, **terms, **TAIL_SOURCES}


def columns() -> list[str]:
    return ["step", *sources(), "update_s"]


def _mean(values: list[float]) -> float | None:
    return fmean(values) if values else None


def rollout_summary(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """What one step's rollouts look like beyond the part means the composite logs itself.

    Rewards of None (dead letters) are left out: they were not measured. Shapes are the painting call sites
    (`beginShape` and `circle`) in each extracted sketch. The on-subject share is over the rollouts whose subject is
    known: the share whose painting shows the subject's colours (`rewards.subject_match`; no painting counts as not).
    """
    rewards = [row["reward"] for row in rows if row["reward"] is not None]
    on_subject = [float(row["on_subject"]) for row in rows if row.get("on_subject") is not None]
    coverages = [row["coverage"] for row in rows if row["coverage"] is not None]
    shapes = [
        float(counts["shapes"] + counts["circles"])
        for row in rows
        if row["sketch"] is not None
        for counts in [json.loads(row["parts"])["verdict"]["counts"]]  # the gate's inventory, not a second one
    ]
    return {
        "rollouts/reward_median": median(rewards) if rewards else None,
        "rollouts/reward_best": max(rewards) if rewards else None,
        "rollouts/reward_worst": min(rewards) if rewards else None,
        "rollouts/share_under_0.3": _mean([float(reward < LOW_REWARD) for reward in rewards]),
        "rollouts/coverage_mean": _mean(coverages),
        "rollouts/shapes_mean": _mean(shapes),
        "rollouts/on_subject_share": _mean(on_subject),
    }


def curve_row(step: int, logs: dict[str, Any]) -> dict[str, Any]:
    """One CSV row from a step's logged metrics; a metric nobody logged (a term at weight 0) stays empty."""
    row: dict[str, Any] = {"step": step, **{column: logs.get(source) for column, source in sources().items()}}
    timed = [row["step_s"], row["generate_s"], row["score_s"]]
    row["update_s"] = timed[0] - timed[1] - timed[2] if None not in timed else None
    return row


def summary_line(row: dict[str, Any], total_steps: int) -> str:
    """The one line the CLI prints per step."""

    def number(value: Any, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    return (
        f"step {row['step']}/{total_steps} | reward {number(row['reward_mean'], '.3f')} "
        f"(best {number(row['reward_best'], '.3f')}) | gate {number(row['gate_pass_rate'], '.0%')} | "
        f"on subject {number(row.get('on_subject_share'), '.0%')} | "
        f"dead letters {number(row['dead_letters'], '.0f')} | generate {number(row['generate_s'], '.1f')}s "
        f"score {number(row['score_s'], '.1f')}s update {number(row['update_s'], '.1f')}s"
    )


class CurvesFile:
    """`run_dir/curves.csv`: appended one row per step; truncated to the resumed step on resume."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / CURVES_FILE

    def append(self, row: dict[str, Any]) -> None:
        header = self.header()
        if header is not None and not set(row) <= set(header):
            # A term registered since the file was started: rewrite it once under the wider header.
            self._rewrite(self.read(), [*header, *(column for column in row if column not in header)])
            header = self.header()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=header or list(row))
            if header is None:
                writer.writeheader()
            writer.writerow(row)

    def header(self) -> list[str] | None:
        """The file's columns (an older run's order is kept: rows are appended under the header they find)."""
        if not self.path.exists():
            return None
        with self.path.open(newline="") as handle:
            return next(csv.reader(handle), None)

    def read(self) -> list[dict[str, str]]:
        if not self.path.exists():
            return []
        with self.path.open(newline="") as handle:
            # A crash mid-append can leave a short last line; it is not a row.
            return [row for row in csv.DictReader(handle) if None not in row.values() and row["step"].isdigit()]

    def truncate(self, after_step: int) -> None:
        """Keep rows up to `after_step`, rewritten whole and renamed into place."""
        if not self.path.exists():
            return
        kept = [row for row in self.read() if int(row["step"]) <= after_step]
        self._rewrite(kept, self.header() or columns())

    def _rewrite(self, rows: list[dict[str, Any]], fieldnames: list[str]) -> None:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)
        write_atomic(self.path, buffer.getvalue().encode())


def number(value: str | None) -> float | None:
    """A curve cell as a number; an empty cell (a term not measured that step) is None."""
    return float(value) if value not in (None, "") else None


def reward_trend(steps: list[float], rewards: list[float]) -> tuple[float, float, float]:
    """OLS slope of reward on step, its standard error and t = slope / SE (needs three steps or more)."""
    n = len(steps)
    if n < 3:
        raise ValueError(f"a trend needs at least 3 steps with a reward, got {n}")
    x_mean, y_mean = fmean(steps), fmean(rewards)
    sxx = sum((x - x_mean) ** 2 for x in steps)
    slope = sum((x - x_mean) * (y - y_mean) for x, y in zip(steps, rewards, strict=True)) / sxx
    intercept = y_mean - slope * x_mean
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(steps, rewards, strict=True))
    se = math.sqrt(residual / (n - 2) / sxx)
    t = slope / se if se > 0 else math.copysign(math.inf, slope) if slope else 0.0
    return slope, se, t


def rewarded_steps(run_dir: Path) -> list[dict[str, str]]:
    """The curve rows of `run_dir` that logged a reward, by step (not file order: "first" and "last" are steps,
    whatever order the rows were appended in). Raises if there are none."""
    rows = [row for row in CurvesFile(Path(run_dir)).read() if number(row["reward_mean"]) is not None]
    rows.sort(key=lambda row: float(row["step"]))
    if not rows:
        raise ValueError(f"no steps with a reward in {Path(run_dir) / 'curves.csv'}: has the run trained a step?")
    return rows
