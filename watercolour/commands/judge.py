"""`watercolour judge audit | hacks`: how far the run's judge and scorers can be trusted.

`audit` asks the judge a preset names (offline by default; `judge-led` with `judge.base_url=...` for a VLM) about the
reference pool and, with `--run`, a run's rendered rollouts, beside two planted controls; writes `audit.md` and
`audit.json` to `--out` (see `watercolour/judge_trust/judge_audit.py` for each figure). `hacks` scores the allowlisted
hack sketches and the pool through the preset's reward and says which scorer each hack fools (`hacks.md`, `hacks.json`;
see `watercolour/judge_trust/reward_hacks.py`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from watercolour.commands.arguments import (
    UsageError,
    count,
    existing_folder,
    output_folder,
    override,
    pool_folder,
    positive_int,
    preset,
    run_config,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=["audit", "hacks", "modes"],
        help="audit: consistency, bias and tier agreement; hacks: which scorer each reward hack fools; modes: "
        "reference-pool against group-relative judging on the same groups.",
    )
    parser.add_argument("--preset", type=preset, default="offline", help="Run preset whose judge is used (offline).")
    parser.add_argument(
        "--pool", type=pool_folder, help="Reference pool folder (default: the preset's, else bundled)."
    )
    parser.add_argument("--run", type=existing_folder, help="A run directory whose rendered rollouts join the audit.")
    parser.add_argument("--out", type=output_folder, help="Where the report goes (runs/judge-audit, runs/hacks).")
    parser.add_argument("--pairs", type=positive_int, default=24, help="Pairs asked in both orders, twice (24).")
    parser.add_argument("--triads", type=count, default=24, help="Triads checked for cycles (24).")
    parser.add_argument("--tier-pairs", type=count, default=24, help="love x okay pairs (24).")
    parser.add_argument("--challengers", type=count, default=4, help="Paintings each reference meets (4).")
    parser.add_argument("--seed", type=int, default=0, help="Seeds every sample the audit draws.")
    parser.add_argument("--json", action="store_true", help="Print the report as JSON instead of markdown.")
    parser.add_argument(
        "overrides",
        nargs="*",
        type=override,
        metavar="KEY=VALUE",
        help="Configuration overrides, e.g. judge.base_url=http://127.0.0.1:8000/v1",
    )


def run(args: argparse.Namespace) -> int:
    import sys

    from watercolour.judge_trust.audit_report import audit_markdown, run_audit
    from watercolour.judge_trust.judge_audit import AuditSettings
    from watercolour.judge_trust.reward_hacks import hacks_markdown, run_hacks

    config = run_config(args.preset, args.overrides, pool_dir=args.pool)
    if args.action == "modes":
        import asyncio

        from watercolour.judge_trust.judge_modes import compare_modes, modes_markdown

        out = args.out or Path("runs/judge-modes")
        out.mkdir(parents=True, exist_ok=True)
        figures = asyncio.run(compare_modes(config, out, groups=args.pairs, size=4))
        page = modes_markdown(figures, 4)
        (out / "modes.md").write_text(page)
        print(page)
        return 0
    if args.action == "hacks":
        out = args.out or Path("runs/hacks")
        table = run_hacks(config, out)
        print(table.model_dump_json(indent=2) if args.json else hacks_markdown(table))
        print(f"wrote {out / 'hacks.md'} and {out / 'hacks.json'}", file=sys.stderr)
        return 0
    if args.run is not None and not (args.run / "rollouts" / "png").is_dir():
        raise UsageError(f"{args.run} holds no rendered rollouts (rollouts/png): pass a run directory that trained")
    out = args.out or Path("runs/judge-audit")
    settings = AuditSettings(
        pairs=args.pairs, triads=args.triads, tier_pairs=args.tier_pairs, challengers=args.challengers, seed=args.seed
    )
    try:
        report = run_audit(config, out, args.run, settings)
    except ValueError as error:  # a pool too small to audit, a judge mix the pool cannot meet
        raise UsageError(str(error)) from None
    print(report.model_dump_json(indent=2) if args.json else audit_markdown(report))
    print(f"wrote {out / 'audit.md'} and {out / 'audit.json'}", file=sys.stderr)
    return 0
