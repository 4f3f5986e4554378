"""This machine's GPU stack beside the one every GPU figure was measured on (`requirements-gpu.lock`, which
`make gpu-setup` installs), and the Gated DeltaNet route a run of the recipe's policy gets here, with why:
`watercolour rehearse --route`, the last lines of `make gpu-setup`. Nothing is built or loaded on the GPU."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
from pathlib import Path


LOCK = Path(__file__).resolve().parents[2] / "requirements-gpu.lock"
# The packages that decide the route and the speed of a step, in the order a reader checks them; then the compiler.
SHOWN = ("torch", "triton", "flash-linear-attention", "tilelang")
NVCC = "nvidia-cuda-nvcc"


def measured_versions(lock: Path = LOCK) -> dict[str, str]:
    """Each package of the measured stack and its version, as the lock pins it."""
    pins = [line.split("==") for line in lock.read_text().splitlines() if "==" in line and not line.startswith("#")]
    return {name.strip(): version.strip() for name, version in pins}


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def stack_lines(measured: dict[str, str]) -> list[str]:
    """One line a package: the version here, and the measured one where it differs; then the GPU torch sees."""
    import torch

    lines = []
    for name in SHOWN:
        here = installed_version(name)
        if name == "torch":
            here = torch.__version__  # with its build's label: +cu130, +cpu
        same = here is not None and here.split("+")[0] == measured[name]
        lines.append(f"{name} {here or 'not installed'}{'' if same else f' (measured: {measured[name]})'}")
    nvcc = nvcc_path()
    release = nvcc_release(nvcc) if nvcc is not None else None
    if nvcc is None:
        lines.append(f"nvcc not found (measured: {measured[NVCC]}; TileLang compiles fla's backward with it)")
    else:
        differs = "" if release == measured[NVCC] else f" (measured: {measured[NVCC]})"
        lines.append(f"nvcc {release or 'of unknown release'} at {nvcc}{differs}")
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        lines.append(
            f"GPU: {torch.cuda.get_device_name()} (compute capability {major}.{minor}), CUDA {torch.version.cuda}"
        )
    else:
        lines.append(f"GPU: none that torch can use (CUDA build: {torch.version.cuda or 'no, a CPU build'})")
    return lines


def nvcc_path() -> Path | None:
    """The nvcc TileLang compiles with, found as TileLang finds it: CUDA_HOME's (or CUDA_PATH's), the one on PATH,
    the nvidia-cuda-nvcc wheel's, /usr/local/cuda's."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        return found if (found := Path(home) / "bin" / "nvcc").exists() else None
    if on_path := shutil.which("nvcc"):
        return Path(on_path)
    try:
        wheel = [Path(str(file.locate())) for file in importlib.metadata.files(NVCC) or [] if file.name == "nvcc"]
    except importlib.metadata.PackageNotFoundError:
        wheel = []
    toolkit = Path("/usr/local/cuda/bin/nvcc")
    return wheel[0] if wheel else toolkit if toolkit.exists() else None


def nvcc_release(nvcc: Path) -> str | None:
    """'13.0.88' from nvcc's `--version` ("Cuda compilation tools, release 13.0, V13.0.88")."""
    shown = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=False).stdout
    return match.group(1) if (match := re.search(r"release [\d.]+, V([\d.]+)", shown)) else None


def route_lines() -> list[str]:
    """The route a policy with Gated DeltaNet layers gets here, why, and what the run will say of it."""
    from watercolour.policy.linear_attention import ROUTE_LINES, decide, fla_facts

    facts = fla_facts()
    route = decide(facts, has_layers=True)
    return [f"Gated DeltaNet route: {route}", f"  why: {facts.why}", f"  {ROUTE_LINES[route]}"]


def describe() -> str:
    return "\n".join([*stack_lines(measured_versions()), *route_lines()])
