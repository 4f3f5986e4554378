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
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


PACKAGE = Path(__file__).resolve().parents[1] / "openenv_painting"
BASE = "docker.io/library/python:3.11-slim-bookworm"
HELPER = "localhost/openenv-validation-helper"
# podman answers on its socket within a second of starting; ten means it will not.
SOCKET_TIMEOUT_S = 10.0


@contextmanager
def docker_host() -> Iterator[str]:
    """DOCKER_HOST as set, or podman's Docker-compatible API on a socket of its own for as long as the block runs."""
    if os.environ.get("DOCKER_HOST"):
        yield os.environ["DOCKER_HOST"]
        return
    with tempfile.TemporaryDirectory(prefix="podman-api-") as folder:
        socket = Path(folder) / "podman.sock"
        service = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{socket}"])
        try:
            deadline = time.monotonic() + SOCKET_TIMEOUT_S
            while not socket.exists():
                if service.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("podman's API service did not start: run `make images` (it sets podman up)")
                time.sleep(0.1)
            yield f"unix://{socket}"
        finally:
            service.terminate()
            service.wait(timeout=30)


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

    with docker_host() as host:
        os.environ["DOCKER_HOST"] = host
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
