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
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from watercolour.commands.arguments import (
    existing_file,
    http_urls,
    output_folder,
    override,
    pool_folder,
    preset,
    run_config,
)


if TYPE_CHECKING:
    from ground.run_config import RunConfig


def one_url(text: str) -> str:
    urls = http_urls(text)
    if len(urls) != 1:
        raise argparse.ArgumentTypeError(f"one URL, not {len(urls)}: {text!r}")
    return urls[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", type=existing_file, metavar="PATH", help="Sketch (.js) or completion files."
    )
    parser.add_argument("--preset", type=preset, required=True, help="Weights and backends of this preset (offline).")
    parser.add_argument("--scorer-url", type=one_url, help="The aesthetic scorer's base URL (sets aesthetic.url).")
    parser.add_argument("--judge-url", type=one_url, help="The judge's OpenAI-compatible base URL (judge.base_url).")
    parser.add_argument("--pool", type=pool_folder, help="Reference pool folder for the judge (default: bundled).")
    parser.add_argument("--seed", type=int, default=0, help="Render seed and the judge's reference draw (default 0).")
    parser.add_argument("--out", type=output_folder, help="Write each painting here as <input name>.png.")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        type=override,
        default=[],
        metavar="KEY=VALUE",
        help="Any other configuration override, e.g. --set judge.attempts=1 (repeatable).",
    )
    parser.add_argument("--json", action="store_true", help="One JSON object per input per line on stdout.")


def configuration(args: argparse.Namespace) -> RunConfig:
    """The preset, then --set overrides, then the named flags; any error is one line (UsageError)."""
    named = {"aesthetic.url": args.scorer_url, "judge.base_url": args.judge_url, "pool_dir": args.pool}
    return run_config(args.preset, args.overrides, **named, **{"render.seed": args.seed})


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


async def score_files(args: argparse.Namespace, config: RunConfig, run_dir: Path) -> list[dict[str, Any]]:
    from rewards.scoring.scoring_engine import ScoringEngine
    from watercolour.commands.render import read_completion

    engine = ScoringEngine(config.model_copy(update={"run_dir": run_dir}).scoring, run_dir)
    try:
        texts = [read_completion(path) for path in args.paths]
        scored = await engine.score(texts, [args.seed] * len(texts), step=None)
    finally:
        await engine.aclose()
    return [score_line(path, parts, args.out) for path, parts in zip(args.paths, scored, strict=True)]


def run(args: argparse.Namespace) -> int:
    config = configuration(args)
    # The run directory holds the engine's cache and dead-letter log: nothing of it outlives the command.
    with tempfile.TemporaryDirectory(prefix="watercolour-score-") as run_dir:
        lines = asyncio.run(score_files(args, config, Path(run_dir)))
    for line in lines:
        print(json.dumps(line) if args.json else show_score(line), flush=True)
    return 0
