"""The browser libraries, read once from the npm install at the repository root and served by the harness."""

from __future__ import annotations

import functools
import json
from pathlib import Path


LIBRARIES = ("p5", "p5.brush", "ses")
REPO_ROOT = Path(__file__).resolve().parents[1]
NODE_MODULES = REPO_ROOT / "node_modules"


@functools.cache
def library(name: str) -> tuple[str, bytes]:
    """Return (version, bytes) of `p5`, `p5.brush` or `ses`, as pinned in package-lock.json."""
    files = {"p5": "p5/lib/p5.min.js", "p5.brush": "p5.brush/dist/p5.brush.js", "ses": "ses/dist/ses.umd.min.js"}
    path = NODE_MODULES / files[name]
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `make setup` (it runs `npm ci`) at the repository root")
    version = json.loads((NODE_MODULES / name / "package.json").read_text())["version"]
    return version, path.read_bytes()
