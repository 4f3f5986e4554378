"""`watercolour score`: the training reward of sketch or completion files, one JSON object (or line) per input.

Each input goes through the scoring engine exactly as a rollout does in training, under the preset's weights and
backends: the gate, then every registered term, then the weighted sum. A `.js` file is a bare sketch; any other
file is a completion as the policy wrote it. The output of each input carries `path`, `reward` (a number, or null
when a service could not answer), `parts` (every registered term), `violations`, `dead_letter` (null or its stage
and cause) and, with `--out`, `png`. The exit status is 0 when every input was processed, whatever the rewards:
a dead service is a null reward and a dead letter, not a failure of the command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="Sketch (.js) or completion files.")
    parser.add_argument("--preset", required=True, help="Weights and backends of this preset (e.g. offline).")
    parser.add_argument("--scorer-url", help="The aesthetic scorer's base URL (sets aesthetic.url).")
    parser.add_argument("--judge-url", help="The judge's OpenAI-compatible base URL (sets judge.base_url).")
    parser.add_argument("--pool", type=Path, help="Reference pool folder for the judge (default: the bundled one).")
    parser.add_argument("--seed", type=int, default=0, help="Render seed and the judge's reference draw (default 0).")
    parser.add_argument("--out", type=Path, help="Write each painting here as <input name>.png.")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Any other configuration override, e.g. --set judge.attempts=1 (repeatable).",
    )
    parser.add_argument("--json", action="store_true", help="One JSON object per input per line on stdout.")


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    from watercolour.config import parse_overrides

    overrides = parse_overrides(args.overrides)
    named = {"aesthetic.url": args.scorer_url, "judge.base_url": args.judge_url, "pool_dir": args.pool}
    overrides.update({key: str(value) for key, value in named.items() if value is not None})
    overrides["render.seed"] = args.seed
    return overrides


def score_line(path: Path, parts: Any, out: Path | None) -> dict[str, Any]:
    """The output object of one input."""
    verdict = parts.verdict
    letter = parts.dead_letter
    line: dict[str, Any] = {
        "path": str(path),
        "reward": parts.reward,
        "parts": dict(parts.terms),
        "violations": list(verdict.violations) if verdict is not None else [],
        "dead_letter": {"stage": letter.stage, "cause": letter.cause} if letter is not None else None,
    }
    if out is not None:
        png = verdict.render.png if verdict is not None and verdict.render is not None else None
        line["png"] = None
        if png is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{path.stem}.png").write_bytes(png)
            line["png"] = str(out / f"{path.stem}.png")
    return line


def show_score(line: dict[str, Any]) -> str:
    reward = "null" if line["reward"] is None else f"{line['reward']:.3f}"
    parts = " ".join(
        f"{name} {'-' if value is None else format(value, '.3f')}" for name, value in line["parts"].items()
    )
    tail = f"  [{', '.join(line['violations'])}]" if line["violations"] else ""
    if line["dead_letter"] is not None:
        tail += f"  dead letter: {line['dead_letter']['stage']}: {line['dead_letter']['cause']}"
    return f"{line['path']}: reward {reward} ({parts}){tail}"


async def score_files(args: argparse.Namespace, run_dir: Path) -> list[dict[str, Any]]:
    from rewards.scoring_engine import ScoringEngine
    from watercolour.commands.render import read_completion
    from watercolour.config import load_config

    config = load_config(args.preset, {**config_overrides(args), "run_dir": str(run_dir)})
    engine = ScoringEngine(config, run_dir)
    try:
        texts = [read_completion(path) for path in args.paths]
        scored = await engine.score(texts, [args.seed] * len(texts), step=None)
    finally:
        await engine.aclose()
    return [score_line(path, parts, args.out) for path, parts in zip(args.paths, scored, strict=True)]


def run(args: argparse.Namespace) -> int:
    missing = [str(path) for path in args.paths if not path.is_file()]
    if missing:
        print(f"watercolour score: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        # The run directory holds the engine's cache and dead-letter log: nothing of it outlives the command.
        with tempfile.TemporaryDirectory(prefix="watercolour-score-") as run_dir:
            lines = asyncio.run(score_files(args, Path(run_dir)))
    except ValueError as error:  # a bad preset, override or URL setting: the message names the fix
        print(f"watercolour score: {error}", file=sys.stderr)
        return 2
    for line in lines:
        print(json.dumps(line) if args.json else show_score(line), flush=True)
    return 0
