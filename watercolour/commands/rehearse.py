"""`watercolour rehearse`: what a preset's run costs on this machine, before fetching any weights.

The preset's policy is built with random weights at its published shape (`training.model=shape:...`,
`watercolour.rehearsal.shapes`), its remote services are stand-ins on 127.0.0.1 (the scorer Space's app with its
stand-in model behind a stand-in Hub, an OpenAI-compatible judge), and the preset's real trainer runs a few steps:
the Space is woken, health-checked, given its idle backstop and put to sleep as a run does it; the rollouts end at
lengths drawn from the recipe's and are scored as the bundled pool's sketches (`watercolour.rehearsal`). It prints each
step's parts, the peak memory, and the whole run projected from the warm steps (`watercolour.rehearsal.projection`).

    watercolour rehearse --preset judge-led --steps 3 [--project-steps 110] [KEY=VALUE ...]
    watercolour rehearse --preset judge-led --serve     # the stand-ins alone, for a Prefect run's overrides
    watercolour rehearse --report RUN_DIR               # the same report for any run's measured steps
    watercolour rehearse --route                        # this machine's GPU stack and Gated DeltaNet route, and why
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

from watercolour.commands.arguments import (
    UsageError,
    check_inputs,
    existing_folder,
    output_folder,
    override,
    positive_int,
    preset,
)


# A remote preset's configuration needs endpoints to validate; these stand for the stand-ins until they have started.
PLACEHOLDERS = {"aesthetic.url": "http://127.0.0.1:9", "judge.base_url": "http://127.0.0.1:9/v1"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--preset", type=preset, help="Run preset in deployments/presets.")
    what.add_argument(
        "--report", type=existing_folder, metavar="RUN_DIR", help="Only print the report of a run's measured steps."
    )
    what.add_argument(
        "--route",
        action="store_true",
        help="Only print this machine's GPU stack against the measured one (requirements-gpu.lock) and the Gated "
        "DeltaNet route a run gets here, with why.",
    )
    parser.add_argument(
        "--save-every", type=positive_int, help="Steps between checkpoints in the projection (default: the run's)."
    )
    parser.add_argument("--steps", type=positive_int, default=3, help="Steps to run (the first compiles; default 3).")
    parser.add_argument(
        "--processes",
        type=positive_int,
        help="Training processes, one a GPU (training.processes): rehearse a run on the GPUs of one host.",
    )
    parser.add_argument(
        "--project-steps",
        type=positive_int,
        help="Steps of the run to project (default: the preset's training.steps).",
    )
    parser.add_argument("--run-dir", type=output_folder, help="Run directory (default runs/rehearse-<preset>-<time>).")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="Only start the stand-ins and print the overrides that point a run at them (one JSON line), until "
        "interrupted: for `prefect deployment run train/<preset> -p overrides=...`.",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        type=override,
        metavar="KEY=VALUE",
        help="Configuration overrides, e.g. render.browsers=8.",
    )


def run(args: argparse.Namespace) -> int:
    from watercolour.commands.arguments import run_config
    from watercolour.rehearsal.services import TOKEN, TOKEN_ENV, stand_ins
    from watercolour.rehearsal.shapes import UnknownShape, shape_of_model

    if args.route:
        from watercolour.rehearsal.stack import describe

        print(describe())
        return 0
    if args.report is not None:
        from ground.run_config import RunConfig

        if not (args.report / "config.yaml").is_file():
            raise UsageError(f"{args.report} holds no config.yaml: name a run directory")
        config = RunConfig.load(args.report / "config.yaml")
        report(config, args.project_steps or config.training.steps, args.save_every or config.training.save_steps)
        return 0

    # ---- the preset as the run would have it, and its policy as a published shape with random weights
    user = dict(args.overrides)
    probe = run_config(args.preset, list((PLACEHOLDERS | user).items()))
    try:
        model = shape_of_model(probe.training.model)
    except UnknownShape as error:
        raise UsageError(str(error)) from None
    # Random weights have nothing to warm-start from; every step saves, so a checkpoint is timed.
    rehearsal = {"training.model": model, "training.warm_start_examples": 0, "training.start_adapter": None}
    project_steps = args.project_steps or probe.training.steps

    with stand_ins(probe) as services:
        if args.serve:
            return serve(rehearsal | services.overrides, TOKEN_ENV, TOKEN)
        run_dir = args.run_dir or Path("runs") / f"rehearse-{args.preset}-{time.strftime('%Y%m%d-%H%M%S')}"
        settings = {**user, **rehearsal, "training.save_steps": 1, **services.overrides}
        if args.processes is not None:
            settings["training.processes"] = args.processes
        config = run_config(args.preset, list(settings.items()), **{"training.steps": args.steps, "run_dir": run_dir})
        check_inputs(config)
        processes = config.training.processes
        print(
            f"rehearsal of {args.preset}: {model} (random weights), {args.steps} steps"
            f"{f' in {processes} processes' if processes > 1 else ''}, in {config.run_dir}"
        )
        for line in services.describe():
            print(f"  {line}")
        print("  completions end at lengths drawn from the recipe's and are scored as the bundled pool's sketches")
        rehearse(config)
    report(config, project_steps, args.save_every or probe.training.save_steps)
    return 0


def rehearse(config: Any) -> None:
    """The run's own sequence around the trainer: the Space woken and checked, the judge pinged, the trainer, the
    Space asleep however the training ends."""
    import asyncio

    from rewards.judging.judge import judge_settings
    from watercolour.operations.service_health import ping_judge, services_to_check, wait_for_scorer
    from watercolour.operations.space_control import set_sleep_backstop, sleep_space
    from watercolour.run_records.run_dir import use_run_environment

    use_run_environment(Path(config.run_dir))  # trackio reads its directory once, when TRL imports it
    from watercolour.training.run import train

    space = config.space
    try:
        if space is not None:
            set_sleep_backstop(space)
        checks = services_to_check(config)
        if "scorer" in checks:
            print(f"  {wait_for_scorer(config, space)}")
        if "judge" in checks:
            print(f"  judge answered as {asyncio.run(ping_judge(judge_settings(config)))}")
        train(config)
    finally:
        if space is not None:
            print(f"  Space {space.repo_id}: {sleep_space(space)}")


def report(config: Any, project_steps: int, save_every: int) -> None:
    """Each step's parts, the peak memory, and the projected run."""
    from watercolour.rehearsal.projection import from_curves, part_costs, project, table
    from watercolour.run_records.curves import CurvesFile

    rows = CurvesFile(Path(config.run_dir)).read()
    training = config.training
    # The reward's wait after generation, and of it the last painting still scoring ahead (early scoring): the rest
    # is the reward call's own.
    # A synchronous batch decodes until its longest row ends, its slots filled by the mean row over the longest;
    # pipelined rollouts log their decode steps and fill (none for a step whose rows had all ended before it).
    print(
        "\n| step | longest row | decode steps | batch fill | generate s | decode ms | reward wait s | "
        "of it, scoring ahead s | update s | checkpoint s | peak GiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        longest = float(row["longest"] or 0)
        pipelined = bool(row.get("decode_steps"))
        decoded = float(row["decode_steps"]) if pipelined else longest
        synchronous_fill = float(row["completion_mean"]) / longest if longest else None
        fill = row.get("decode_fill") if pipelined else synchronous_fill
        decode = 1000 * float(row["generate_s"]) / decoded if decoded else 0.0
        print(
            f"| {row['step']} | {longest:,.0f} | {decoded:,.0f} | {f'{float(fill):.0%}' if fill else '-'} | "
            f"{float(row['generate_s']):.1f} | {decode:.1f} | {float(row['score_s']):.1f} | "
            f"{seconds(row.get('ahead_tail_s'))} | {float(row['update_s']):.1f} | {seconds(row.get('checkpoint_s'))} | "
            f"{row.get('peak_gib') or '-'} |"
        )
    peaks = [float(row["peak_gib"]) for row in rows if row.get("peak_gib")]
    print(f"\npeak memory: {max(peaks):.1f} GiB" if peaks else "\npeak memory: not measured")
    steps = from_curves(rows, training.num_generations, training.max_completion_length)
    try:
        costs = part_costs(steps)
    except ValueError as error:
        print(f"no projection: {error}")
        return
    staleness = training.pipeline.max_staleness
    schedule = f", rollouts pipelined within {staleness} update(s)" if staleness else ""
    print(f"\nthe whole run, {project_steps} steps with a checkpoint every {save_every}{schedule}:")
    print(table(costs, project(costs, project_steps, save_every, staleness), project_steps, save_every))


def serve(overrides: dict[str, Any], token_env: str, token: str) -> int:
    """Print the overrides as one JSON line and keep the stand-ins up until SIGINT or SIGTERM."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(json.dumps(overrides), flush=True)
    print(f"export {token_env}={token}   # the stand-in Space owner's token, for the worker that runs the flow")
    print("stand-ins up; Ctrl-C stops them", flush=True)
    stop.wait()
    return 0


def seconds(cell: str | None) -> str:
    return f"{float(cell):.2f}" if cell else "-"
