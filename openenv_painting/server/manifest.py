"""OpenEnv's manifest of the painting environment (`openenv.yaml`), derived from the preset the server scores with.

`openenv validate` and `openenv push` read `openenv.yaml`; its `validation:` block is a set of promises about the
server (reward range, judge, network, resources, oracle and canaries). They depend on the preset: the offline
stand-ins need no network and no LLM, a remote judge needs both. So the block is computed here from the run
configuration and never written by hand; `python -m openenv_painting.server.manifest --preset NAME` writes it, and the
suite checks that the shipped file is the `offline` preset's (the one `server/asgi.py` serves).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from ground.reference_pool import load_pool
from ground.run_config import RepaintSettings, RunConfig
from openenv_painting.server.app import SERVICE_MARGIN_S, ServerSettings, preset_config
from openenv_painting.server.environment import NAME, VERSION
from rewards.aesthetic import aesthetic_settings
from rewards.judging.judge import judge_settings
from rewards.judging.judge_protocol import judge_digest
from rewards.scoring.scoring_engine import RENDER_ATTEMPTS


PACKAGE = Path(__file__).resolve().parents[1]
MANIFEST = PACKAGE / "openenv.yaml"
# The preset the shipped manifest and `server/asgi.py` describe: it runs anywhere, with no network and no token.
SHIPPED_PRESET = "offline"
# The oracle must stand at least half the reward range above the canaries (`semantic.floor_gap`); OpenEnv's
# policy asks for 0.1 at least. The oracle's measured reward less the canaries' (0.0) is asserted in the suite.
FLOOR_MARGIN = 0.5
# The oracle's final painting scores 0.931 of 1.0 under the offline preset (openenv_painting/trajectories.py): a
# painting reaches the ceiling only if the aesthetic scorer gives it 1.0 and it beats every reference. OpenEnv's
# policy allows at most 0.1 here; the suite asserts the oracle reaches 1.0 less this.
ORACLE_TOLERANCE = 0.1
# One render of a 600x600 watercolour is ~1 s of one core; a warm browser with two pages holds ~1.9 GB with the
# server (docs/openenv.md, load test: 1.9 GB for one session, 2.5 GB for 64). The run directory's cache and dead
# letters for one validation episode stay under a few MB; the image's own layers are not the subject's disk.
CPU = 2.0
MEMORY_MB = 4096
DISK_MB = 2048


def episode_timeout_s(config: RunConfig) -> float:
    """The longest one episode takes alone on the server: each painting renders at most twice to the deadline,
    then the service terms (remote ones retry) take at most the margin."""
    turns = (config.repaint or RepaintSettings()).turns
    return turns * (RENDER_ATTEMPTS * config.render.deadline_s + SERVICE_MARGIN_S)


def remote_hosts(config: RunConfig) -> list[str]:
    """The hosts the server's reward terms call: a remote judge's and a remote aesthetic scorer's."""
    judge, aesthetic = judge_settings(config), aesthetic_settings(config)
    urls = []
    if judge.backend == "openai" and config.weights.judge > 0:
        urls.append(judge.base_url)
    if aesthetic.backend == "hpsv3" and config.weights.aesthetic > 0:
        urls.append(aesthetic.url)
    return sorted({urlsplit(url).hostname or url for url in urls if url})


def llm_judged(config: RunConfig) -> bool:
    """Whether a VLM judges: the offline judge is a deterministic statistics stand-in, not a language model."""
    return judge_settings(config).backend == "openai" and config.weights.judge > 0


def judge_variance_tolerance(config: RunConfig) -> float:
    """How far two runs of one episode may differ: one of the judge's comparisons flipping (each painting meets
    `references` references in both orders, so one verdict is 1/(2k) of the judge term) at the judge's weight."""
    return round(config.weights.judge / (2 * judge_settings(config).references), 6)


def validation_block(config: RunConfig) -> dict[str, Any]:
    """OpenEnv's `validation:` block for a server scoring with `config`."""
    reward: dict[str, Any] = {"range": [0.0, 1.0], "oracle_tolerance": ORACLE_TOLERANCE, "floor_margin": FLOOR_MARGIN}
    block: dict[str, Any] = {"reward": reward}
    capabilities: dict[str, Any] = {
        # The reward arrives on every step's observation (`reward`): OpenEnv's served reward channel.
        "verifier": {"kind": "reward_channel"},
        "oracle": {"form": "script", "location": "validation/oracle.py"},
        "canaries": "validation/canaries.json",
        "declared_tools": ["paint"],
        "llm_judged": llm_judged(config),
    }
    if llm_judged(config):
        judge = judge_settings(config)
        reward["variance_tolerance"] = judge_variance_tolerance(config)
        block["judge"] = {
            "model": judge.model,
            # The judge's own id (`OpenAIJudge.backend_id`): the model, and a digest of what else changes a verdict
            # (criteria, the reference draw, the pool's pictures). The endpoint serves the model id's weights.
            "version": judge_digest(judge, load_pool(config.pool_dir)),
            "params": {
                "base_url": judge.base_url,
                "temperature": 0,
                "max_tokens": judge.max_tokens,
                "references": judge.references,
                "mode": judge.mode,
            },
        }
    block["resources"] = {
        "cpu": CPU,
        "memory_mb": MEMORY_MB,
        "disk_mb": DISK_MB,
        "episode_timeout_s": episode_timeout_s(config),
    }
    hosts = remote_hosts(config)
    block["network"] = {"mode": "allowlist", "allowed_hosts": hosts} if hosts else {"mode": "no-network"}
    block["capabilities"] = capabilities
    block["types"] = {"tags": ["code-generation", "p5js", "watercolour", "multi-turn"]}
    # OpenEnv's runtime lane builds a Dockerfile inside this package, with a context inside it; the server is the
    # scoring engine beside the package, so that Dockerfile starts from the Space's image, built first from the
    # Space bundle (`make images`). The probe is the oracle's episode; remote terms read their keys at run time.
    block["execution"] = {
        "probe_path": "validation/runtime.json",
        "dockerfile": "validation/Dockerfile",
        "context": "validation",
        "requires_credentials": bool(hosts),
    }
    return block


def manifest(config: RunConfig, settings: ServerSettings | None = None) -> dict[str, Any]:
    """The whole `openenv.yaml` (OpenEnv's `openenv init` layout) for a server scoring with `config`."""
    return {
        "spec_version": 1,
        "name": NAME,
        "version": VERSION,
        "type": "space",
        "runtime": "fastapi",
        "app": "openenv_painting.server.asgi:app",
        "port": (settings or ServerSettings(port=8000)).port,
        "validation": validation_block(config),
    }


def render(config: RunConfig, preset: str, overrides: list[str] | None = None) -> str:
    command = " ".join(["python -m openenv_painting.server.manifest --preset", preset, *(overrides or [])])
    header = (
        f"# OpenEnv's manifest of the painting environment for the `{preset}` preset, written by\n"
        f"# `{command}` (docs/openenv.md): edit the code, not this file.\n"
    )
    return header + yaml.safe_dump(manifest(config), sort_keys=False, default_flow_style=None, width=119)


def main(argv: list[str] | None = None) -> None:
    """`python -m openenv_painting.server.manifest [--preset offline] [--output openenv_painting/openenv.yaml]
    [key=value ...]`: the overrides are the server's (`aesthetic.url=...` for a remote scorer)."""
    parser = argparse.ArgumentParser(
        prog="python -m openenv_painting.server.manifest",
        description="Write OpenEnv's manifest for a preset's server.",
    )
    parser.add_argument("--preset", default=SHIPPED_PRESET, help="The preset the server scores with.")
    parser.add_argument("--output", type=Path, default=MANIFEST, help="Where to write it ('-': stdout).")
    parser.add_argument("overrides", nargs="*", help="Run-configuration overrides the server runs with, key=value.")
    args = parser.parse_args(argv)
    text = render(preset_config(parser, args.preset, args.overrides), args.preset, args.overrides)
    if str(args.output) == "-":
        print(text, end="")
    else:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
