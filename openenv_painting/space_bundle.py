"""The painting environment as one self-contained directory: what `openenv push` uploads as a Docker Space and
`docker build` takes as its context.

`openenv push DIR` wants the environment's package at DIR's root (`openenv.yaml`, `__init__.py`, `client.py`,
`README.md`, a Dockerfile, and a `pyproject.toml`), and a Docker Space builds with DIR as the context. The server
is the scoring engine itself, so the bundle is this package's files at the root and, beside them, what the
Dockerfile copies: the engine's packages (the reference pool is package data under `ground/seed_pool`), the
presets, the locked Python environment and p5's npm lock. The Dockerfile puts the package back under its import
name. Only tracked files travel (`git ls-files`): no virtual environment, node_modules, runs or caches.

`python -m openenv_painting.space_bundle build/space`, then `openenv push build/space --repo-id OWNER/NAME
--no-interface` (docs/openenv.md, "Publish").
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path


PACKAGE = Path(__file__).resolve().parent
REPOSITORY = PACKAGE.parent
# What the Dockerfile copies beside the package, as the repository holds it.
ENGINE = (
    "ground",
    "episodes",
    "watercolour",
    "renderers",
    "rewards",
    "tasks",
    "flows",
    "deployments",
    "package.json",
    "package-lock.json",
    "requirements.lock",
    "pyproject.toml",
)


def tracked_files(repository: Path = REPOSITORY) -> list[str]:
    """The repository's tracked files, as paths relative to its root."""
    listed = subprocess.run(["git", "-C", str(repository), "ls-files", "-z"], capture_output=True, text=True)
    if listed.returncode != 0:
        raise RuntimeError(f"{repository} is not a git checkout: the bundle is made from its tracked files")
    return [path for path in listed.stdout.split("\0") if path]


def bundle_layout(tracked: list[str]) -> dict[str, str]:
    """Where each file goes in the bundle (bundle path -> repository path): the package's at the root, the
    engine's where the repository has them."""
    layout: dict[str, str] = {}
    for path in tracked:
        top, _, rest = path.partition("/")
        if top == PACKAGE.name:
            target = rest
        elif top in ENGINE:
            target = path
        else:
            continue
        if target in layout:
            raise ValueError(f"{path} and {layout[target]} would both be {target} in the bundle: rename one")
        layout[target] = path
    return layout


def write_bundle(out: Path, repository: Path = REPOSITORY) -> dict[str, str]:
    """Copy the bundle's files into `out` (new or empty); returns the layout it wrote."""
    layout = bundle_layout(tracked_files(repository))
    for target, source in layout.items():
        (out / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repository / source, out / target)
    return layout


def main(argv: list[str] | None = None) -> int:
    """`python -m openenv_painting.space_bundle OUT`."""
    parser = argparse.ArgumentParser(description="Write the painting environment's Docker Space bundle.")
    parser.add_argument("out", type=Path, help="A new or empty directory to write it to (e.g. build/space).")
    args = parser.parse_args(argv)
    out: Path = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"space_bundle: {out} exists and is not empty: name a new or empty directory", file=sys.stderr)
        return 2
    layout = write_bundle(out)
    size = sum((out / target).stat().st_size for target in layout)
    print(f"wrote {len(layout)} files ({size / 1e6:.1f} MB) to {out}")
    print(f"push it as a Docker Space: openenv push {out} --repo-id OWNER/NAME --no-interface")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
