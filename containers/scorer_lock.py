"""Write scorer_space/requirements.lock: every package the scorer Space's requirements.txt resolves to, pinned.

pip resolves against PyPI alone (this machine's pip configuration and its local wheel folders are left out), for
this interpreter (CPython 3.11 on x86-64 Linux, as in the image), without installing anything: PyPI serves each
wheel's metadata on its own, so resolving the multi-GB CUDA torch costs a minute, not the download.
`make scorer-lock`, after changing scorer_space/requirements.txt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


SPACE = Path(__file__).resolve().parents[1] / "scorer_space"
HEADER = """\
# Every package of the scorer Space's environment at its exact version: the Dockerfile installs exactly this
# (`pip install --no-deps -r requirements.lock`). Written by `make scorer-lock` from requirements.txt (the direct
# pins and why); edit that, not this.
"""


def resolve(requirements: Path) -> list[str]:
    """`name==version` for every package pip would install from `requirements` into an empty environment."""
    env = {key: value for key, value in os.environ.items() if key not in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL")}
    env["PIP_CONFIG_FILE"] = os.devnull
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--dry-run",
                "--ignore-installed",
                "--quiet",
                "--report",
                str(report),
                "--index-url",
                "https://pypi.org/simple",
                "-r",
                str(requirements),
            ],
            env=env,
            check=True,
        )
        installed = json.loads(report.read_text())["install"]
    pins = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in installed}
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


def main() -> None:
    lock = SPACE / "requirements.lock"
    pins = resolve(SPACE / "requirements.txt")
    lock.write_text(HEADER + "\n".join(pins) + "\n")
    print(f"wrote {len(pins)} packages to {lock}")


if __name__ == "__main__":
    main()
