"""Network isolation by construction: Chromium runs in an empty network namespace (renderers/offline_chromium.sh).

The request router and the launch flags see and refuse what goes through Chromium's network stack, but
WebRTC's UDP, preconnects and DNS prefetches bypass them (a STUN packet reached a loopback listener). In a
namespace with no interface there is nowhere for any packet to go. It needs `unshare`: as root with
CAP_SYS_ADMIN, or as any user where unprivileged user namespaces are allowed (docs/rendering.md).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


WRAPPER = Path(__file__).resolve().parent / "offline_chromium.sh"
ENV_EXECUTABLE = "WATERCOLOUR_OFFLINE_CHROMIUM"


def offline_launch(executable: str) -> tuple[str, dict[str, str]]:
    """The executable and environment that start `executable` with no network; RuntimeError names the fix."""
    env = {**os.environ, ENV_EXECUTABLE: "/bin/true"}
    try:
        check = subprocess.run([str(WRAPPER)], env=env, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        check = subprocess.CompletedProcess([], 1, "", str(error))
    if check.returncode != 0:
        raise RuntimeError(
            f"cannot give Chromium an empty network namespace ({check.stderr.strip() or 'unshare failed'}): "
            "run as root with CAP_SYS_ADMIN, or allow unprivileged user namespaces "
            "(sysctl user.max_user_namespaces > 0; in Docker `--security-opt seccomp=unconfined` or "
            "`--cap-add SYS_ADMIN`); or accept the request router alone with BrowserPool(isolate_network=False)"
        )
    return str(WRAPPER), {ENV_EXECUTABLE: executable}
