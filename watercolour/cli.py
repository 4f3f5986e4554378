"""The `watercolour` console script: one entry point for everything a person runs by hand.

Each subcommand lives in `watercolour/commands/<name>.py` with `add_arguments(parser)` and `run(args) -> int`;
modules are imported only when their command runs, so `watercolour --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys


COMMANDS = {
    "render": "Render sketches or completions to PNGs (JSON lines on stdout).",
    "gate": "Run the admission gate on sketches or completions (JSON lines on stdout).",
    "demo": "The README's main job on its offline default.",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="watercolour", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text)
    # Parse the command name first, then let only that command's module declare its arguments.
    known, _ = parser.parse_known_args(argv)
    module = importlib.import_module(f"watercolour.commands.{known.command}")
    command_parser = sub.choices[known.command]
    module.add_arguments(command_parser)
    args = parser.parse_args(argv)
    return int(module.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
