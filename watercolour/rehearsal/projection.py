"""A whole run's wall time, projected from measured steps' parts: what `watercolour rehearse` prints at the end,
and the ETA on a Prefect run's progress.

From a run's warm steps (every step after the first, which compiles) it takes the per-part costs: one decode step
(generation over the step's decode steps: a synchronous batch decodes until its longest row ends, pipelined rollouts
log how many they ran), the update per token (prompt and completion), the reward's wait after generation, a
checkpoint, and the first step's one-off compilation. It then projects a run of N steps under two assumptions about
completion lengths, each step's decode steps those of the run's own schedule: the longest row of a synchronous
group, or for pipelined rollouts (`training.pipeline.max_staleness`) the decode steps of
`watercolour.pipeline.row_schedule.simulate` over rows of those lengths, its slots refilled within the bound:

- `recipe lengths`: rows drawn from the recipe's own length distribution (`watercolour.rehearsal.lengths`: a mean of
  2,000 tokens, 0.7% of rows at the 8,192 cap), averaged over many drawn groups;
- `a row at the cap every step`: the worst case, one row of every group running to the budget.

Steps come as `StepRow`s, read off a run's curves (`from_curves`) or a GPU benchmark's rows (bench/gpu).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Any

from watercolour.pipeline.row_schedule import Ticket, simulate
from watercolour.rehearsal.lengths import recipe_lengths


# The published judge-led run: 110 steps in 125,293 s of step time (its curves' step_time column).
PUBLISHED_STEPS = 110
PUBLISHED_S = 125_293


@dataclass(frozen=True)
class StepRow:
    """One measured step: its parts in seconds and its tokens."""

    step: int
    generations: int
    budget: int
    longest: int
    generate_s: float
    score_s: float
    update_s: float
    completion_tokens: float
    prompt_tokens: float  # of the whole step (every row's prompt)
    checkpoint_s: float | None = None
    decode_steps: int | None = None  # pipelined rollouts: the decode steps the step ran (None: its longest row)

    @property
    def decoded(self) -> int:
        """The step's decode steps: a synchronous batch decodes until its longest row ends."""
        return self.decode_steps if self.decode_steps is not None else self.longest


@dataclass(frozen=True)
class Costs:
    generations: int
    budget: int
    decode_s: float
    update_s_per_token: float
    wait_s: float
    compile_s: float
    checkpoint_s: float
    prompt_tokens_per_row: float


def from_curves(rows: list[dict[str, Any]], generations: int, budget: int) -> list[StepRow]:
    """A run's curve rows (`watercolour.run_records.curves`) as step rows. A row missing a timing column is left out,
    and so is the first row after a resume, whose tokens before it are not in the file."""
    steps = []
    previous: float | None = None
    for row in sorted(rows, key=lambda row: int(row["step"])):
        values = {key: _number(row.get(key)) for key in MEASURED}
        seen = values["num_tokens"]
        before = previous if previous is not None else (0.0 if int(row["step"]) == 1 else None)
        previous = seen
        if before is None or None in values.values():
            continue
        measured = {key: float(value) for key, value in values.items() if value is not None}
        completion = measured["completion_mean"] * generations
        steps.append(
            StepRow(
                step=int(row["step"]),
                generations=generations,
                budget=budget,
                longest=int(measured["longest"]),
                generate_s=measured["generate_s"],
                score_s=measured["score_s"],
                update_s=measured["update_s"],
                completion_tokens=completion,
                prompt_tokens=max(0.0, measured["num_tokens"] - before - completion),
                checkpoint_s=_number(row.get("checkpoint_s")),
                decode_steps=_count(row.get("decode_steps")),
            )
        )
    return steps


# The curve columns a step row is read from (all but the checkpoint's, which most steps have none of).
MEASURED = ("longest", "completion_mean", "num_tokens", "generate_s", "score_s", "update_s")


def _number(value: Any) -> float | None:
    return float(value) if value not in (None, "") else None


def _count(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def part_costs(steps: list[StepRow]) -> Costs:
    """The per-part costs of warm steps (after the first step, which pays the compilation)."""
    first = min(steps, key=lambda row: row.step, default=None)
    warm = [row for row in steps if first is not None and row.step > first.step]
    if first is None or not warm:
        raise ValueError("no warm steps: a projection needs at least two measured steps (the first compiles)")
    # A pipelined step whose rows had all ended in earlier steps decoded nothing: it times no decode step.
    decode_s = statistics.median(row.generate_s / row.decoded for row in warm if row.decoded)
    checkpoints = [row.checkpoint_s for row in steps if row.checkpoint_s]
    return Costs(
        generations=first.generations,
        budget=first.budget,
        decode_s=decode_s,
        update_s_per_token=statistics.median(
            row.update_s / (row.completion_tokens + row.prompt_tokens) for row in warm
        ),
        wait_s=statistics.median(row.score_s for row in warm),
        compile_s=max(0.0, first.generate_s - first.decoded * decode_s),
        checkpoint_s=statistics.median(checkpoints) if checkpoints else 0.0,
        prompt_tokens_per_row=statistics.median(row.prompt_tokens / row.generations for row in warm),
    )


def expected_lengths(generations: int, budget: int, capped_row: bool, groups: int = 20_000) -> tuple[float, float]:
    """(mean longest row, mean completion tokens of a group) under the recipe's distribution; `capped_row` puts one
    row of every group at the budget."""
    draw = random.Random(0)
    longest, total = 0.0, 0.0
    for _ in range(groups):
        lengths = [recipe_lengths(draw, budget) for _ in range(generations)]
        if capped_row:
            lengths[0] = budget
        longest += max(lengths)
        total += sum(lengths)
    return longest / groups, total / groups


def pipelined_decode_steps(
    generations: int, budget: int, capped_row: bool, max_staleness: int, steps: int = 2_000
) -> tuple[float, float]:
    """(mean decode steps of a pipelined step, mean fill of its slots) with rows drawn as `expected_lengths` draws
    them, decoded by the run's schedule: one group a step in as many slots."""
    draw = random.Random(0)
    groups: dict[int, list[int]] = {}

    def length(ticket: Ticket) -> int:
        if ticket.step not in groups:
            lengths = [recipe_lengths(draw, budget) for _ in range(generations)]
            if capped_row:
                lengths[0] = budget
            groups[ticket.step] = lengths
        return groups[ticket.step][ticket.index]

    measured = simulate(length, generations, generations, max_staleness, steps)
    return statistics.fmean(row.decode_steps for row in measured), statistics.fmean(row.fill for row in measured)


def project(costs: Costs, steps: int, save_every: int, max_staleness: int = 0) -> list[dict[str, Any]]:
    """A run of `steps` steps with a checkpoint every `save_every`, under each length assumption; `max_staleness`
    above 0 projects pipelined rollouts."""
    rows = []
    for name, capped in (("recipe lengths", False), ("a row at the cap every step", True)):
        longest, tokens = expected_lengths(costs.generations, costs.budget, capped)
        decoded, fill = longest, tokens / (costs.generations * longest)
        if max_staleness:
            decoded, fill = pipelined_decode_steps(costs.generations, costs.budget, capped, max_staleness)
        generate = decoded * costs.decode_s
        update = (tokens + costs.generations * costs.prompt_tokens_per_row) * costs.update_s_per_token
        step = generate + update + costs.wait_s + costs.checkpoint_s / save_every
        total = steps * step + costs.compile_s
        rows.append(
            {
                "lengths": name,
                "longest": round(longest),
                "decode_steps": round(decoded),
                "fill": round(fill, 2),
                "tokens": round(tokens),
                "generate_s": round(generate, 1),
                "update_s": round(update, 1),
                "wait_s": round(costs.wait_s, 1),
                "step_s": round(step, 1),
                "run_h": round(total / 3600, 2),
                "vs_published": round(PUBLISHED_S * steps / PUBLISHED_STEPS / total, 2),
            }
        )
    return rows


def table(costs: Costs, rows: list[dict[str, Any]], steps: int, save_every: int) -> str:
    """The projection as a markdown table, under a line of the measured costs it rests on."""
    checkpoint = f"{costs.checkpoint_s:.1f} s" if costs.checkpoint_s else "not measured (counted as 0 s)"
    lines = [
        f"measured: {1000 * costs.decode_s:.1f} ms a decode step, {1000 * costs.update_s_per_token:.2f} ms of "
        f"update a token, {costs.wait_s:.1f} s of reward wait, {costs.compile_s:.0f} s of compilation once; "
        f"a checkpoint every {save_every} steps: {checkpoint}",
        "",
        f"| lengths | longest row | decode steps | batch fill | tokens a group | generate s | update s | wait s | "
        f"step s | {steps} steps | vs the published run |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['lengths']} | {row['longest']:,} | {row['decode_steps']:,} | {row['fill']:.0%} | "
            f"{row['tokens']:,} | {row['generate_s']} | {row['update_s']} | {row['wait_s']} | {row['step_s']} | "
            f"{row['run_h']} h | {row['vs_published']}x faster |"
        )
    return "\n".join(lines)


def eta_s(steps: list[StepRow], total_steps: int, save_every: int) -> float | None:
    """Seconds left for a run at the pace of its measured steps (the warm steps' median step with its share of a
    checkpoint); None before a second step was measured."""
    if len(steps) < 2:
        return None
    last = max(row.step for row in steps)
    warm = [row for row in steps if row.step > min(r.step for r in steps)]
    step_s = statistics.median(row.generate_s + row.score_s + row.update_s for row in warm)
    checkpoints = [row.checkpoint_s for row in steps if row.checkpoint_s]
    checkpoint = statistics.median(checkpoints) / save_every if checkpoints else 0.0
    return max(0, total_steps - last) * (step_s + checkpoint)
