"""`python -m bench.gpu.projection ROWS.jsonl`: a whole run's wall time, projected from measured steps' parts.

From the warm steps of a scored cell (`python -m bench.gpu --scoring real|recipe`, rows after the first, which
compiles) it takes the per-part costs: one decode step (a batch decodes until its longest row ends, so generation
is the longest row times that), the update per token (prompt and completion), the reward's wait after generation,
and the first step's one-off compilation. It then projects a run of `--steps` steps under two assumptions about
completion lengths:

- `recipe lengths`: rows drawn from the recipe's own length distribution (bench/gpu/scoring.py: a mean of 2,000
  tokens, 0.7% of rows at the 8,192 cap), averaged over many drawn groups;
- `a row at the cap every step`: the worst case, one row of every group running to the budget.

    python -m bench.gpu.projection bench/gpu/results/2026-12-02-h200-run15-qwen3.5-moe-recipe-step.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path
from typing import Any

from bench.gpu.scoring import recipe_lengths


# The published judge-led run: 110 steps in 125,293 s of step time (its curves' step_time column).
PUBLISHED_STEPS = 110
PUBLISHED_S = 125_293
# The bench prompt's tokens per row as TRL counted them (num_tokens less the completions) in the recipe-shape runs.
PROMPT_TOKENS = 1089
# A checkpoint every 10 steps (the recipe's save_steps).
SAVE_EVERY = 10


def part_costs(rows: list[dict[str, Any]], prompt_tokens: int) -> dict[str, float]:
    steps = [row for row in rows if "step" in row and "longest" in row]
    warm = [row for row in steps if row["step"] > 1]
    if not warm:
        raise SystemExit("no warm steps in these rows: the projection needs a cell of at least two steps")
    decode_s = statistics.median(row["generate_s"] / row["longest"] for row in warm)
    first = min(steps, key=lambda row: row["step"])
    checkpoints = [row["checkpoint_s"] for row in rows if "checkpoint_s" in row]
    return {
        "generations": first["generations"],
        "budget": first["max_len"],
        "decode_s": decode_s,
        "update_s_per_token": statistics.median(
            row["update_s"] / (row["tokens"] + row["generations"] * prompt_tokens) for row in warm
        ),
        "wait_s": statistics.median(row["score_s"] for row in warm),
        "compile_s": max(0.0, first["generate_s"] - first["longest"] * decode_s),
        "checkpoint_s": statistics.median(checkpoints) if checkpoints else 0.0,
    }


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


def project(costs: dict[str, float], steps: int, prompt_tokens: int) -> list[dict[str, Any]]:
    rows = []
    generations, budget = int(costs["generations"]), int(costs["budget"])
    for name, capped in (("recipe lengths", False), ("a row at the cap every step", True)):
        longest, tokens = expected_lengths(generations, budget, capped)
        generate = longest * costs["decode_s"]
        update = (tokens + generations * prompt_tokens) * costs["update_s_per_token"]
        step = generate + update + costs["wait_s"] + costs["checkpoint_s"] / SAVE_EVERY
        total = steps * step + costs["compile_s"]
        rows.append(
            {
                "lengths": name,
                "longest": round(longest),
                "tokens": round(tokens),
                "generate_s": round(generate, 1),
                "update_s": round(update, 1),
                "wait_s": round(costs["wait_s"], 1),
                "step_s": round(step, 1),
                "run_h": round(total / 3600, 2),
                "vs_published": round(PUBLISHED_S * steps / PUBLISHED_STEPS / total, 2),
            }
        )
    return rows


def table(costs: dict[str, float], rows: list[dict[str, Any]], steps: int) -> str:
    checkpoint = f"{costs['checkpoint_s']:.1f} s" if costs["checkpoint_s"] else "not measured (counted as 0 s)"
    lines = [
        f"measured: {1000 * costs['decode_s']:.1f} ms a decode step, {1000 * costs['update_s_per_token']:.2f} ms of "
        f"update a token, {costs['wait_s']:.1f} s of reward wait, {costs['compile_s']:.0f} s of compilation once; "
        f"a checkpoint every {SAVE_EVERY} steps: {checkpoint}",
        "",
        f"| lengths | longest row | tokens a group | generate s | update s | wait s | step s | {steps} steps | "
        "vs the published run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['lengths']} | {row['longest']:,} | {row['tokens']:,} | {row['generate_s']} | {row['update_s']} | "
            f"{row['wait_s']} | {row['step_s']} | {row['run_h']} h | {row['vs_published']}x faster |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=Path, help="a bench_gpu.jsonl of one scored cell")
    parser.add_argument("--steps", type=int, default=PUBLISHED_STEPS)
    parser.add_argument("--prompt-tokens", type=int, default=PROMPT_TOKENS)
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    costs = part_costs(rows, args.prompt_tokens)
    projected = project(costs, args.steps, args.prompt_tokens)
    print(table(costs, projected, args.steps))
    return projected


if __name__ == "__main__":
    main()
