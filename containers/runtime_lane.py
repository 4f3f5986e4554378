"""OpenEnv's runtime lane on the painting environment, here: its own runner, graders and Docker-local provider,
through podman's Docker-compatible socket, with the one thing this machine cannot give it made locally.

`openenv validate openenv_painting --level semantic` starts a helper container for its network probes from an image
pinned by digest on Docker Hub (python:3.12-slim@sha256:c3d8...), and no image registry can be reached from here:
it stops at `runtime.startup` with "Could not pull the network helper image". This runs the same validation with
the helper made from the local Debian base image (its scripts are standard-library Python), referenced by that
image's own digest, as the provider requires. Everything else is the installed validator's: the build of
`validation/Dockerfile`, the container started read-only as uid 65532 with 256 processes, the probe episode, the
network measurement and the graders. Run `make images` first; `make test-images` runs this in its test.

`python containers/runtime_lane.py [--json]`: exit 0 when no check fails or errs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


PACKAGE = Path(__file__).resolve().parents[1] / "openenv_painting"
BASE = "docker.io/library/python:3.11-slim-bookworm"
HELPER = "localhost/openenv-validation-helper"
SOCKET_SCRIPT = Path(__file__).resolve().parent / "podman_socket.sh"


def docker_host() -> str:
    """DOCKER_HOST as set, or podman's Docker-compatible API on its socket, started as the docs start it
    (`containers/podman_socket.sh`)."""
    if os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"]
    started = subprocess.run([str(SOCKET_SCRIPT)], check=True, capture_output=True, text=True)
    return started.stdout.strip().removeprefix("export DOCKER_HOST=")


def helper_image() -> str:
    """The local base image under the helper's name, referenced by digest."""
    subprocess.run(["podman", "tag", BASE, HELPER], check=True)
    digest = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Digest}}", HELPER], check=True, capture_output=True, text=True
    ).stdout.strip()
    return f"{HELPER}@{digest}"


def validate() -> dict:
    """The validation report (OpenEnv's JSON) of the package at the semantic level, built and started."""
    from openenv.validation.providers.docker import DockerValidationProvider
    from openenv.validation.runner import run_validation
    from openenv.validation.types import Level

    os.environ["DOCKER_HOST"] = docker_host()
    provider = DockerValidationProvider(helper_image=helper_image())
    report = run_validation(PACKAGE, max_level=Level.SEMANTIC, provider=provider)
    return json.loads(report.model_dump_json())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="OpenEnv's runtime lane on the painting image, through podman.")
    parser.add_argument("--json", action="store_true", help="Print OpenEnv's JSON report.")
    args = parser.parse_args(argv)
    report = validate()
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for result in report["results"]:
            print(f"{result['status'].upper():5} {result['check_id']}: {'; '.join(result['evidence'])}")
        print(f"verdict: {report['verdict']}")
    failed = [result for result in report["results"] if result["status"] in ("fail", "error")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
