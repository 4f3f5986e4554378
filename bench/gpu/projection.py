"""`python -m bench.gpu.projection ROWS.jsonl`: the projection of `watercolour rehearse`, over a GPU benchmark's rows.

The rows of a scored cell (`python -m bench.gpu --scoring real|recipe`) become the rehearsal's step rows, and the
projection is the product's own (`watercolour.rehearsal.projection`): per-part costs of the warm steps, a run of
`--steps` steps under the recipe's lengths and with a row at the cap every step.

    python -m bench.gpu.projection lab/results/gpu/2026-12-02-h200-run15-qwen3.5-moe-recipe-step.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from watercolour.rehearsal.projection import PUBLISHED_STEPS, StepRow, part_costs, project, table


# The bench prompt's tokens per row as TRL counted them (num_tokens less the completions) in the recipe-shape runs.
PROMPT_TOKENS = 1089
# A checkpoint every 10 steps (the recipe's save_steps).
SAVE_EVERY = 10


def step_rows(rows: list[dict[str, Any]], prompt_tokens: int) -> list[StepRow]:
    """A cell's step rows (its `checkpoint_s` rows time the save after each step)."""
    checkpoints = {row["checkpoint_after_step"]: row["checkpoint_s"] for row in rows if "checkpoint_s" in row}
    return [
        StepRow(
            step=row["step"],
            generations=row["generations"],
            budget=row["max_len"],
            longest=row["longest"],
            generate_s=row["generate_s"],
            score_s=row["score_s"],
            update_s=row["update_s"],
            completion_tokens=row["tokens"],
            prompt_tokens=row["generations"] * prompt_tokens,
            checkpoint_s=checkpoints.get(row["step"]),
            decode_steps=row.get("decode_steps"),
        )
        for row in rows
        # An update-only cell's rollouts were drawn, not decoded: its steps have no generation to project.
        if "step" in row and "longest" in row and row.get("rollouts") != "drawn"
    ]


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=Path, help="a bench_gpu.jsonl of one scored cell")
    parser.add_argument("--steps", type=int, default=PUBLISHED_STEPS)
    parser.add_argument("--prompt-tokens", type=int, default=PROMPT_TOKENS)
    parser.add_argument(
        "--max-staleness", type=int, default=0, help="project pipelined rollouts within this bound (0: synchronous)"
    )
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    costs = part_costs(step_rows(rows, args.prompt_tokens))
    projected = project(costs, args.steps, SAVE_EVERY, args.max_staleness)
    print(table(costs, projected, args.steps, SAVE_EVERY))
    return projected


if __name__ == "__main__":
    main()
