"""`watercolour pool`: build the reference pool by hand: generate, rate, pack, calibrate, refresh (docs/pool.md)."""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
from pathlib import Path

from watercolour.commands.arguments import (
    UsageError,
    existing_folder,
    http_urls,
    one_line,
    output_file,
    output_folder,
    pool_folder,
    port,
    positive_float,
    positive_int,
)


def candidate_folder(text: str) -> Path:
    """A folder `pool generate` wrote: it holds candidates.jsonl."""
    from watercolour.pool.candidates import CANDIDATES

    folder = existing_folder(text)
    if not (folder / CANDIDATES).is_file():
        raise argparse.ArgumentTypeError(
            f"no {CANDIDATES} in {text}: run `watercolour pool generate --endpoints URL --models MODEL --out {text}` first"
        )
    return folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")

    generate = steps.add_parser("generate", help="Generate, gate and render candidates from chat models.")
    generate.add_argument(
        "--endpoints", type=http_urls, required=True, help="OpenAI-compatible base URLs, comma-separated."
    )
    generate.add_argument("--models", required=True, help="Model ids, comma-separated (one endpoint each, or one).")
    generate.add_argument("--per-model", type=positive_int, default=15, help="First drafts per model (default 15).")
    generate.add_argument(
        "--out", type=output_folder, required=True, help="Candidate folder (created; batches append)."
    )
    generate.add_argument("--subject", default="a peach hibiscus", help="What to paint, or 'sample' for a mix.")
    generate.add_argument("--photos", type=existing_folder, help="Folder of reference photos with attribution.json.")
    generate.add_argument("--rounds", type=int, default=0, choices=range(4), help="Critique-and-revise rounds (0-3).")
    generate.add_argument("--critic-url", help="OpenAI-compatible base URL of the vision critic.")
    generate.add_argument("--critic-model", help="Model id of the vision critic.")
    generate.add_argument("--token-env", default="HF_TOKEN", help="Env var holding the API key (default HF_TOKEN).")
    generate.add_argument("--max-tokens", type=positive_int, default=2400, help="Reply budget of one sketch.")
    generate.add_argument(
        "--timeout", type=positive_float, default=180.0, help="Read timeout of one call, in seconds."
    )
    generate.add_argument("--seed", type=int, default=0, help="Seeds subjects and temperatures.")

    rate = steps.add_parser("rate", help="Rate candidates in a local web page (1 love, 2 okay, 3 meh, 4 nope).")
    rate.add_argument("folder", type=candidate_folder, help="Candidate folder written by `pool generate`.")
    rate.add_argument("--port", type=port, default=8765, help="Port on 127.0.0.1 (default 8765).")
    rate.add_argument("--no-open", action="store_true", help="Do not open a browser tab.")
    rate.add_argument("--all", action="store_true", help="Also show candidates the gate refused.")

    pack = steps.add_parser("pack", help="Pack rated candidates into a pool folder and dataset.")
    pack.add_argument("folder", nargs="?", type=candidate_folder, help="Candidate folder (omit with --bundled).")
    pack.add_argument("--out", type=output_folder, required=True, help="Pool folder to write.")
    pack.add_argument("--bundled", action="store_true", help="Pack the bundled seed pool instead.")
    pack.add_argument(
        "--push",
        metavar="REPO_ID",
        help="Also push the pool to this Hub dataset repo (token: $HF_TOKEN; endpoint: $HF_ENDPOINT).",
    )

    calibrate = steps.add_parser("calibrate", help="Win rate of policy paintings against each pool reference.")
    calibrate.add_argument("--pool", type=pool_folder, help="Pool folder (default: the bundled seed pool).")
    calibrate.add_argument("--paintings", required=True, help="Folder of PNG paintings, or a glob.")
    calibrate.add_argument("--k", type=positive_int, default=16, help="Paintings sampled (default 16).")
    calibrate.add_argument("--judge-preset", choices=("offline", "openai"), default="offline", help="Judge backend.")
    calibrate.add_argument("--judge-url", help="OpenAI-compatible base URL (for --judge-preset openai).")
    calibrate.add_argument("--judge-model", help="Judge model id (for --judge-preset openai).")
    calibrate.add_argument("--out", type=output_file, default="calibration.json", help="Report file.")
    calibrate.add_argument("--seed", type=int, default=0, help="Seeds the sample of paintings.")

    refresh = steps.add_parser("refresh", help="Re-render and re-gate a pool; report drift from its PNGs.")
    refresh.add_argument("--pool", type=pool_folder, help="Pool folder (default: the bundled seed pool).")
    refresh.add_argument(
        "--report", type=output_file, default="runs/pool-refresh/report.json", help="Last refresh's report."
    )


def run(args: argparse.Namespace) -> int:
    return {"generate": generate, "rate": rate, "pack": pack, "calibrate": calibrate, "refresh": refresh}[args.step](
        args
    )


def generate(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from renderers import BrowserPool
    from watercolour.pool.generate import POOL_RENDER, GenerateSettings, generate, load_photos

    try:
        settings = GenerateSettings(
            endpoints=args.endpoints,
            models=args.models.split(","),
            per_model=args.per_model,
            subject=args.subject,
            rounds=args.rounds,
            critic_url=args.critic_url,
            critic_model=args.critic_model,
            token_env=args.token_env,
            max_tokens=args.max_tokens,
            timeout_s=args.timeout,
            seed=args.seed,
        )
        settings.model_endpoints()
    except ValidationError as error:
        raise UsageError(one_line(error)) from None
    except ValueError as error:  # endpoints and models do not pair up
        raise UsageError(str(error)) from None
    if settings.rounds and not (settings.critic_url and settings.critic_model):
        raise UsageError("--rounds needs a critic: pass --critic-url and --critic-model")
    try:
        photos = load_photos(args.photos) if args.photos else []
    except (OSError, ValueError) as error:  # no attribution.json, or a photo without a licence: both name the fix
        raise UsageError(str(error)) from None

    async def main() -> int:
        async with BrowserPool.from_settings(POOL_RENDER) as renderer:
            made = await generate(settings, args.out, renderer, photos)
        print(
            f"{sum(c.passed for c in made)} of {len(made)} candidates passed the gate; rate them with "
            f"`watercolour pool rate {args.out}`"
        )
        return 0 if made else 1

    return asyncio.run(main())


def rate(args: argparse.Namespace) -> int:
    from watercolour.pool.rate import serve

    try:
        serve(args.folder, args.port, open_browser=not args.no_open, show_refused=args.all)
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        raise UsageError(f"port {args.port} on 127.0.0.1 is in use: pass another --port") from None
    return 0


def pack(args: argparse.Namespace) -> int:
    from watercolour.pool.pack import bundled_rows, candidate_rows, write_pool

    if args.bundled == (args.folder is not None):
        raise UsageError("pass either a candidate folder or --bundled")
    if args.bundled:
        rows, description = bundled_rows(), "The bundled seed pool, tiers set by the project."
    else:
        rows, description = candidate_rows(args.folder), f"Candidates from {args.folder.name}, rated by a person."
    revision = write_pool(rows, args.out, description)
    tiers = {tier: sum(row["tier"] == tier for row in rows) for tier in ("love", "okay", "meh")}
    print(f"packed {args.out} at revision {revision}: {tiers}")
    if args.push:
        import os

        from watercolour.pool.publish import PoolHubSettings, publish_pool

        # The CLI is where the environment is read: HF_ENDPOINT points a push at a mirror or a test Hub.
        hub = PoolHubSettings(repo_id=args.push, endpoint=os.environ.get("HF_ENDPOINT"))
        print(f"pushed revision {revision} to {publish_pool(args.out, hub)}")
    return 0


def calibrate(args: argparse.Namespace) -> int:
    from rewards.judging.settings import JudgeSettings
    from watercolour.pool.calibrate import calibrate, find_paintings, write_report

    if args.judge_preset == "openai":
        if not (args.judge_url and args.judge_model):
            raise UsageError("--judge-preset openai needs --judge-url and --judge-model")
        settings = JudgeSettings(backend="openai", base_url=args.judge_url, model=args.judge_model)
    else:
        settings = JudgeSettings(backend="offline")
    try:
        paintings = find_paintings(args.paintings)
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None
    report = asyncio.run(calibrate(args.pool, paintings, args.k, settings, args.seed))
    write_report(report, args.out)
    for name, members in report["bands"].items():
        print(f"{name}: {', '.join(members) or '-'}")
    print(f"wrote {args.out}")
    return 0


def refresh(args: argparse.Namespace) -> int:
    import asyncio
    import tempfile

    from ground.reference_pool import BUNDLED_POOL
    from watercolour.pool.refresh import changed, read_last, refresh_sketches, seed_sketches, write_report

    try:
        sketches = seed_sketches(args.pool or BUNDLED_POOL)
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None
    with tempfile.TemporaryDirectory(prefix="watercolour-refresh-") as run_dir:
        rows = asyncio.run(refresh_sketches(sketches, read_last(args.report), Path(run_dir)))
    for row in rows:
        print(json.dumps(row))
    write_report(args.report, rows)
    print(f"refreshed {len(rows)} sketches; changed: {', '.join(changed(rows)) or 'none'}")
    return 0
