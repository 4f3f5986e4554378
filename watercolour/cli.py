"""The `watercolour` console script: one entry point for everything a person runs by hand.

Each subcommand lives in `watercolour/commands/<name>.py` with `add_arguments(parser)` and `run(args) -> int`;
modules are imported only when their command runs, so `watercolour --help` stays fast. Bad input, whether a flag
(checked as it is parsed, `watercolour.commands.arguments`) or a configuration a command raises `UsageError`
for, is one line on stderr and exit code 2.
"""

from __future__ import annotations

import importlib
import sys

from watercolour.commands.arguments import OneLineParser, UsageError


COMMANDS = {
    "render": "Render sketches or completions to PNGs (JSON lines on stdout).",
    "gate": "Run the admission gate on sketches or completions (JSON lines on stdout).",
    "score": "Score sketches or completions with a preset's reward (JSON lines on stdout).",
    "demo": "The README's main job on its offline default.",
    "space": "Wake, pause, sleep or inspect the scorer Space on the Hub.",
    "train": "GRPO-train the policy from a preset into a run directory (--resume continues it).",
    "rehearse": "What a preset's run costs here: its policy's published shape, random weights, stand-in services.",
    "warmstart": "SFT the policy's LoRA on pool and procedural sketches: the adapter GRPO starts from.",
    "evaluate": "Sample, score and compare the base policy and an adapter; writes a side-by-side gallery.",
    "pool": "Build the reference pool by hand: generate, rate, pack, calibrate and refresh candidates.",
    "judge": "Audit the pairwise judge: position bias, self-consistency, transitivity, tier agreement.",
}


def parser_for(argv: list[str]) -> OneLineParser:
    """The parser of `watercolour`, with the arguments of the command `argv` names."""
    parser = OneLineParser(prog="watercolour", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text)
    # Only the named command's module declares its arguments, before anything is parsed: parsing first would
    # answer `watercolour train --help` with the bare subcommand's help.
    command = next((word for word in argv if not word.startswith("-")), None)
    if command in COMMANDS:
        importlib.import_module(f"watercolour.commands.{command}").add_arguments(sub.choices[command])
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = parser_for(argv)
    args = parser.parse_args(argv)
    try:
        return int(importlib.import_module(f"watercolour.commands.{args.command}").run(args) or 0)
    except UsageError as error:
        command = " ".join(word for word in (args.command, getattr(args, "step", None)) if word)
        parser.exit(2, f"watercolour {command}: error: {error}\n")


if __name__ == "__main__":
    sys.exit(main())
