"""`python -m bench.gpu`: GRPO steps of random policies of published shapes on a GPU, default path against fast.

For each shape and group size, builds the policy with random weights on the device, then runs a few steps of
the project's trainer with TRL's default generation path (dynamic cache, eager) and with the trainer's own
GPU defaults (static cache, compiled decode step), and prints seconds per part (generate, score, update) and
generation tokens/s. The first fast step pays the compilation; later steps reuse the graphs. One log-prob and
loss check runs on the first fast cell (bench/gpu/checks.py). Every row is appended to OUT/bench_gpu.jsonl as
soon as it exists, so a run cut short keeps what it measured.

    python -m bench.gpu --shapes qwen3-4b --generations 16 --out DIR
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.gpu.decode_pair import decode_pair_summary
from bench.gpu.profile import decode_summary
from bench.gpu.step import PATHS


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    args.out.mkdir(parents=True, exist_ok=True)
    log = (args.out / "bench_gpu.jsonl").open("a")
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    cell_s: dict[tuple[str, str], float] = {}  # how long the last cell of each (shape, path) took
    checked: list[bool] = []

    def emit(row: dict[str, Any]) -> None:
        rows.append(row)
        log.write(json.dumps(row) + "\n")
        log.flush()
        print(json.dumps(row), flush=True)

    with contextlib.ExitStack() as services:
        backends: dict[str, Any] = {}
        if args.scoring == "recipe":
            from watercolour.rehearsal.services import judge_service, scorer_service

            backends = {
                "aesthetic": {"backend": "hpsv3", "url": services.enter_context(scorer_service())},
                "judge": {
                    "backend": "openai",
                    "base_url": services.enter_context(judge_service()),
                    "model": "loopback",
                },
            }
        for shape in args.shapes:
            for generations in args.generations:
                for path in args.paths:
                    max_len = args.default_max_len if path == "default" and args.default_max_len else args.max_len
                    cell = {
                        "shape": shape,
                        "generations": generations,
                        "path": path,
                        "max_len": max_len,
                        "scoring": args.scoring,
                        **({"rollouts": "drawn"} if args.update_only else {}),
                    }
                    reason = skip_reason(time.perf_counter() - started, args.deadline_s, cell_s.get((shape, path)))
                    if reason is not None:
                        emit({**cell, "skipped": reason})
                        continue
                    cell_started = time.perf_counter()
                    first_fast = path == "fast" and not checked
                    run_cell(args, cell, backends, started + args.deadline_s, emit, first_fast)
                    checked += [True] if first_fast else []
                    cell_s[shape, path] = time.perf_counter() - cell_started
    return rows


def run_cell(
    args: argparse.Namespace,
    cell: dict[str, Any],
    backends: dict[str, Any],
    deadline: float,
    emit: Callable[[dict[str, Any]], None],
    first_fast: bool,
) -> None:
    """One (shape, G, path) cell: its steps, then the log-prob check (the first fast cell) and the profiles of a
    decode step and of one update micro-batch (every compiled path), each unless switched off."""
    import tempfile

    import torch

    from bench.gpu.checks import logprob_check
    from bench.gpu.decode_pair import decode_pair
    from bench.gpu.profile import decode_profile, record_update_batch, update_profile
    from bench.gpu.scoring import alternate_early_scoring, drawn_rollouts, force_lengths
    from bench.gpu.step import (
        PADDED_UPDATE,
        bench_config,
        checkpoint_recorder,
        make_trainer,
        path_kernels,
        spread_reward,
        step_recorder,
    )
    from rewards.scoring.composite import CompositeReward
    from rewards.scoring.scoring_engine import ScoringEngine
    from watercolour.rehearsal.shapes import build_model, shape_tokenizer
    from watercolour.rehearsal.stand_in import PoolSketches
    from watercolour.training.trainer import close_reward

    cuda = torch.cuda.is_available()
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    tokenizer = shape_tokenizer()
    generations, path, max_len = cell["generations"], cell["path"], cell["max_len"]
    steps = args.default_steps if path == "default" else args.fast_steps
    micro = min(args.micro_batch, generations)
    scored = args.scoring != "stand-in"
    with tempfile.TemporaryDirectory() as tmp:
        config = bench_config(
            generations, max_len, micro, path, Path(tmp), RENDER[args.scoring], args.preset, backends or None
        )
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        model = build_model(cell["shape"], tokenizer, device, dtype)
        on_scored = partial(emit_parts, emit, cell)
        reward = (
            CompositeReward(ScoringEngine(config.scoring, Path(tmp)), on_scored, text_of=PoolSketches())
            if scored
            else spread_reward
        )
        trainer = make_trainer(model, tokenizer, config, steps, reward, path)
        trainer.trim_micro_batches = path != PADDED_UPDATE
        # A stand-in reward at the recipe's lengths times a step's generation and update with no renderer.
        forced = scored or args.lengths == "recipe" or args.update_only
        lengths = args.lengths if forced else "the policy's"
        emit(
            {
                **cell,
                "gated_delta_route": trainer.gated_delta_route,
                "plan": trainer.generation_plan,
                "lengths": lengths,
            }
        )
        if args.update_only:
            drawn_rollouts(trainer, max_len, args.lengths)
        elif forced:
            force_lengths(trainer, max_len, args.lengths, paired=args.scoring == "real")
        if scored:
            alternate_early_scoring(trainer)
        if args.scoring == "recipe":
            trainer.args.save_steps = 1  # the recipe saves every 10 steps; each save is timed here
            checkpoint_recorder(trainer, partial(emit_step, emit, cell))
        step_recorder(trainer, partial(emit_step, emit, cell))
        update_batch = record_update_batch(trainer)
        hard_stop(trainer, deadline)
        if args.decode_only:
            try:
                with path_kernels(path):
                    decode_pair(trainer, generations, args.decode_tokens, args.decode_rounds, emit, cell)
                    if args.profile:  # the host's waits a step, each way
                        for without_waiting in (True, False):
                            name = path if without_waiting else f"{path}-synced"
                            profiled = decode_profile(
                                trainer, generations, args.out, name, without_waiting=without_waiting
                            )
                            emit({**cell, "without_waiting": without_waiting, "profile": profiled})
            finally:
                close_reward(trainer)
        else:
            with path_kernels(path):
                try:
                    trainer.train()
                finally:
                    close_reward(trainer)
                if first_fast and args.check and not args.update_only:
                    emit({**cell, "check": logprob_check(trainer, generations)})
                # Every compiled path is profiled, so levers compare part by part; the update where it is timed whole.
                if path != "default" and args.profile:
                    if not args.update_only:
                        emit({**cell, "profile": decode_profile(trainer, generations, args.out, path)})
                    emit({**cell, "update_profile": update_profile(trainer, update_batch, args.out, path)})
        del trainer, model
        gc.collect()
        torch._dynamo.reset()
        if cuda:
            torch.cuda.empty_cache()


def emit_parts(
    emit: Callable[[dict[str, Any]], None],
    cell: dict[str, Any],
    prompts: Any,
    completions: Any,
    parts: list[Any],
    kwargs: dict[str, Any],
) -> None:
    """A scored batch's part timings as the reward saw them (median ms per rollout), and what failed."""
    keys = sorted({key for part in parts for key in part.timings_ms})
    emit(
        {
            **cell,
            "scored": len(parts),
            "passed": sum(part.passed for part in parts),
            "dead_letters": sum(part.dead_letter is not None for part in parts),
            "part_ms": {
                key: statistics.median(part.timings_ms[key] for part in parts if key in part.timings_ms)
                for key in keys
            },
        }
    )


def skip_reason(elapsed_s: float, deadline_s: float, last_cell_s: float | None) -> str | None:
    """Why the next cell is not started, or None: the deadline has passed, or the last cell of the same shape and
    path took longer than what is left (a step is timed whole, so a cell started late would run past the call's
    hard limit and lose its row; generation time barely moves with G at these sizes, so that cell is the guide)."""
    if elapsed_s > deadline_s:
        return "deadline"
    if last_cell_s is not None and elapsed_s + last_cell_s > deadline_s:
        return f"deadline: the last cell of this shape and path took {last_cell_s:.0f} s, {deadline_s - elapsed_s:.0f} s left"
    return None


# Render pool of a real-scoring cell: 16 pages on the GPU machine's 16 cores, as the learning runs used.
RENDER: dict[str, dict[str, Any] | None] = {
    "stand-in": None,
    "real": {"browsers": 4, "pages_per_browser": 4},
    "recipe": {"browsers": 4, "pages_per_browser": 4},
}


def emit_step(emit: Any, cell: dict[str, Any], row: dict[str, Any]) -> None:
    emit({**cell, **row})


def hard_stop(trainer: Any, deadline: float) -> None:
    """Stop a cell's training after the step that crosses the deadline (the call limit is hard)."""
    from transformers import TrainerCallback

    class Stop(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if time.perf_counter() > deadline:
                control.should_training_stop = True

    trainer.add_callback(Stop())


def summary(rows: list[dict[str, Any]]) -> str:
    """One line per cell: the first step, the warm steps' medians, and the speed-up over the default path."""
    cells: dict[tuple, list[dict]] = {}
    for row in rows:
        if "step" in row:
            cells.setdefault((row["shape"], row["generations"], row["path"]), []).append(row)
    if not cells:
        return ""
    lines = [
        "| shape | G x len | path | steps | first generate s | generate s | tok/s | score s | update s | step s | "
        "peak GiB | vs default |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def warm_rate(steps: list[dict]) -> float:
        return statistics.median(s["tokens_per_s"] for s in (steps[1:] or steps))

    default_rate = {(shape, g): warm_rate(steps) for (shape, g, path), steps in cells.items() if path == "default"}
    for (shape, generations, path), steps in cells.items():
        warm = steps[1:] or steps
        rate = warm_rate(steps)
        base = default_rate.get((shape, generations))
        lines.append(
            f"| {shape} | {generations} x {steps[0]['max_len']} | {path} | {len(steps)} | {steps[0]['generate_s']} | "
            f"{median(warm, 'generate_s')} | {round(rate, 1)} | {median(warm, 'score_s', 3)} | "
            f"{median(warm, 'update_s')} | {median(warm, 'step_s')} | {max(s['peak_gib'] or 0 for s in steps)} | "
            f"{f'{rate / base:.2f}x' if base else '-'} |"
        )
    return "\n".join(lines)


def median(steps: list[dict[str, Any]], key: str, digits: int = 2) -> float:
    """The median of `key` over `steps`, rounded for a table."""
    return round(statistics.median(s[key] for s in steps), digits)


def scoring_summary(rows: list[dict[str, Any]]) -> str:
    """Real-scoring cells: what waiting for the reward added to a warm step, scoring after generation or early."""
    lines = [
        "| shape | G x len | scoring | warm steps | generate s | score s (wait) | step s | score adds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    cells: dict[tuple, list[dict]] = {}
    for row in rows:
        if "step" in row and row["step"] > 1 and row.get("scoring") in ("real", "recipe"):
            cells.setdefault((row["shape"], row["generations"], row["early_scoring"]), []).append(row)
    for (shape, generations, early), steps in sorted(cells.items()):
        score, step, generate = median(steps, "score_s"), median(steps, "step_s"), median(steps, "generate_s")
        lines.append(
            f"| {shape} | {generations} x {steps[0]['max_len']} | {'early' if early else 'after generation'} | "
            f"{len(steps)} | {generate} | {score} | {step} | "
            f"{100 * score / (step - score):.1f}% |"
        )
    if len(lines) == 2:
        return ""
    return "\n".join(lines + ["", *paired_summary(rows)])


def paired_summary(rows: list[dict[str, Any]]) -> list[str]:
    """Each early step against the step after it, which scored after generation on the same drawn lengths.

    What early scoring costs a step is its wait after generation plus whatever scoring during generation slowed
    generation by, read off the paired step: `scoring adds` is that sum as a share of the early step without it.
    """
    lines = [
        "| shape | G x len | steps | step s, after generation | step s, early | early saves | "
        "generate s, after / early | wait s, early | scoring adds to the early step |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    steps = {
        (row["shape"], row["generations"], row["step"]): row
        for row in rows
        if "step" in row and row.get("scoring") in ("real", "recipe")
    }
    for (shape, generations, number), early in sorted(steps.items()):
        after = steps.get((shape, generations, number + 1))
        if number < 2 or not early["early_scoring"] or after is None or after["early_scoring"]:
            continue
        saved = after["step_s"] - early["step_s"]
        slowed = early["generate_s"] - after["generate_s"]
        adds = early["score_s"] + slowed
        lines.append(
            f"| {shape} | {generations} x {early['max_len']} | {number}, {number + 1} | {after['step_s']} | "
            f"{early['step_s']} | {saved:.2f} s ({100 * saved / after['step_s']:.1f}%) | "
            f"{after['generate_s']} / {early['generate_s']} ({slowed:+.2f}) | {early['score_s']} | "
            f"{adds:.2f} s ({100 * adds / (early['step_s'] - adds):.1f}%) |"
        )
    return lines if len(lines) > 2 else []


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["qwen3-4b"], help="names in watercolour/rehearsal/shapes.py")
    parser.add_argument("--generations", nargs="+", type=int, default=[16], help="completions per step (G)")
    parser.add_argument("--paths", nargs="+", default=["default", "fast"], choices=list(PATHS))
    parser.add_argument("--max-len", type=int, default=2048, help="completion tokens")
    parser.add_argument(
        "--default-max-len", type=int, default=0, help="a shorter budget for the default path (0 = --max-len)"
    )
    parser.add_argument("--micro-batch", type=int, default=4, help="sequences per update micro-batch")
    parser.add_argument("--default-steps", type=int, default=1)
    parser.add_argument(
        "--fast-steps",
        type=int,
        default=3,
        help="steps of every compiled path: the first compiles; later ones reuse it",
    )
    parser.add_argument(
        "--scoring",
        default="stand-in",
        choices=["stand-in", "real", "recipe"],
        help="stand-in: an instant reward; real: Chromium renders of pool sketches with drawn completion lengths, "
        "early scoring off and on in alternate steps (bench/gpu/scoring.py); recipe: the same, with the preset's "
        "remote backends (HPSv3 over HTTP, an OpenAI-compatible judge) served on loopback (watercolour/rehearsal/services.py) "
        "and a checkpoint after every step, timed",
    )
    parser.add_argument("--preset", default="offline", help="the preset whose settings and backends a cell uses")
    parser.add_argument(
        "--lengths",
        default="half-to-budget",
        choices=["half-to-budget", "recipe"],
        help="scored cells' completion lengths: between half the budget and the budget, or the recipe's own "
        "distribution (mean 2,000 tokens, 0.7%% of rows at 8,192: bench/gpu/scoring.py), which a stand-in cell "
        "takes too (the step's generation and update at the recipe's lengths on a machine without Chromium)",
    )
    parser.add_argument(
        "--update-only",
        action="store_true",
        help="no decode: each step's rollouts are random tokens at the lengths --lengths draws for it, made at once "
        "(bench/gpu/scoring.py), so the steps time scoring and the update alone; rows say rollouts: drawn, and the "
        "projection leaves them out",
    )
    parser.add_argument(
        "--decode-only",
        action="store_true",
        help="no steps: one rollout compiles each cell's decode step at its shapes, then short rollouts alternate "
        "between the host waiting on each decode step and not (bench/gpu/decode_pair.py), with a profile of each",
    )
    parser.add_argument("--decode-tokens", type=int, default=256, help="tokens of each --decode-only rollout")
    parser.add_argument("--decode-rounds", type=int, default=3, help="--decode-only pairs, the order swapped each")
    parser.add_argument("--no-check", dest="check", action="store_false", help="skip the log-prob/loss check")
    parser.add_argument(
        "--no-profile", dest="profile", action="store_false", help="skip the decode and update profiles"
    )
    parser.add_argument("--deadline-s", type=float, default=480.0, help="start nothing new after this long")
    parser.add_argument("--out", type=Path, default=Path("bench-gpu-out"))
    args = parser.parse_args(argv)
    rows = run(args)
    parts = (summary(rows), scoring_summary(rows), decode_pair_summary(rows), decode_summary(rows))
    table = "\n\n".join(part for part in parts if part)
    (args.out / "bench_gpu.md").write_text(table + "\n")
    print(table)
    checks = [row["check"] for row in rows if "check" in row]
    if checks:
        print(json.dumps(checks[0]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
