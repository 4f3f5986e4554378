"""`watercolour judge audit | hacks`: how far the run's judge and scorers can be trusted.

`audit` asks the judge a preset names (offline by default; `judge-led` with `judge.base_url=...` for a VLM) about
the reference pool and, with `--run`, a run's rendered rollouts, beside two planted controls; writes `audit.md` and
`audit.json` to `--out` (see `watercolour/judge_audit.py` for each figure). `hacks` scores the allowlisted hack
sketches and the pool through the preset's reward and says which scorer each hack fools (`hacks.md`, `hacks.json`;
see `watercolour/reward_hacks.py`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=["audit", "hacks"],
        help="audit: consistency, bias and tier agreement; hacks: which scorer each reward hack fools.",
    )
    parser.add_argument("--preset", default="offline", help="Run preset whose judge is audited (default offline).")
    parser.add_argument("--pool", type=Path, help="Reference pool folder (default: the preset's, else the bundled).")
    parser.add_argument("--run", type=Path, help="A run directory whose rendered rollouts join the audit.")
    parser.add_argument("--out", type=Path, help="Where the report goes (default runs/judge-audit, runs/hacks).")
    parser.add_argument("--pairs", type=_count, default=24, help="Pairs asked in both orders, twice (default 24).")
    parser.add_argument("--triads", type=_count, default=24, help="Triads checked for cycles (default 24).")
    parser.add_argument("--tier-pairs", type=_count, default=24, help="love x okay pairs (default 24).")
    parser.add_argument("--challengers", type=_count, default=4, help="Paintings per reference (default 4).")
    parser.add_argument("--seed", type=int, default=0, help="Seeds every sample the audit draws.")
    parser.add_argument("--json", action="store_true", help="Print the report as JSON instead of markdown.")
    parser.add_argument(
        "overrides", nargs="*", metavar="KEY=VALUE", help="Configuration overrides, e.g. judge.base_url=http://..."
    )


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from watercolour.audit_report import audit_markdown, run_audit
    from watercolour.config import load_config, parse_overrides
    from watercolour.judge_audit import AuditSettings
    from watercolour.reference_pool import PoolError
    from watercolour.reward_hacks import hacks_markdown, run_hacks

    if args.pairs < 1:
        print("error: --pairs must be at least 1", file=sys.stderr)
        return 2
    try:
        overrides = parse_overrides(args.overrides)
        if args.pool is not None:
            overrides["pool_dir"] = str(args.pool)
        config = load_config(args.preset, overrides)
        if args.action == "hacks":
            out = args.out or Path("runs/hacks")
            table = run_hacks(config, out)
            print(table.model_dump_json(indent=2) if args.json else hacks_markdown(table))
            print(f"wrote {out / 'hacks.md'} and {out / 'hacks.json'}", file=sys.stderr)
            return 0
        out = args.out or Path("runs/judge-audit")
        settings = AuditSettings(
            pairs=args.pairs,
            triads=args.triads,
            tier_pairs=args.tier_pairs,
            challengers=args.challengers,
            seed=args.seed,
        )
        report = run_audit(config, out, args.run, settings)
    except (ValidationError, PoolError, FileNotFoundError, ValueError) as error:
        print(f"error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    print(report.model_dump_json(indent=2) if args.json else audit_markdown(report))
    print(f"wrote {out / 'audit.md'} and {out / 'audit.json'}", file=sys.stderr)
    return 0
