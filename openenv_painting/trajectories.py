"""The environment's own episodes for OpenEnv's bar: the probe, the oracle and the canaries, as shipped data.

- **probe** (`validation/runtime.json`, OpenEnv's runtime plan): a reset with a seed and the episode's paintings,
  what `openenv validate` replays against a started server to read the reward, observation and state contracts.
- **oracle** (`validation/oracle.json`, played by `validation/oracle.py`): the best episode known for the shipped
  preset, whose final painting reaches the reward the manifest declares reachable.
- **canaries** (`validation/canaries.json`): episodes that must score the floor, 0.0: no sketch, a blank page, a
  method outside the allowlist, a reach for the network, code run from a string.

Each is data written from here (`python -m openenv_painting.trajectories`; the suite checks the files are
current), and each plays the same in process (`play`) and through a server (`play_remote`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from openenv_painting.models import PaintAction, PaintObservation


VALIDATION = Path(__file__).resolve().parent / "validation"
FIXTURES = Path(__file__).resolve().parents[1] / "watercolour" / "fixtures" / "gate"
POOL = Path(__file__).resolve().parents[1] / "ground" / "seed_pool"
PROMPT = [{"role": "user", "content": "Paint a peach hibiscus."}]
# The floor: what a refused painting scores (the gate's verdict zeroes the composite).
FLOOR = 0.0


class Trajectory(BaseModel):
    """One episode as data: reset with `seed` (the judge's reference draw) and `prompt`, then paint `actions`."""

    name: str
    why: str
    seed: int = Field(ge=0)
    prompt: list[dict[str, str]] = Field(default_factory=lambda: list(PROMPT))
    actions: list[str] = Field(min_length=1, description="The sketches painted, in order.")


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def oracle() -> Trajectory:
    """The oracle: the best-scoring sketch known for the shipped preset, painted and painted again unchanged."""
    sketch = (POOL / ORACLE_SKETCH).read_text()
    return Trajectory(
        name="oracle",
        why=f"The reference pool's {ORACLE_SKETCH}, the best-scoring sketch known for the offline preset.",
        seed=ORACLE_SEED,
        actions=[sketch, sketch],
    )


def canaries() -> list[Trajectory]:
    """Episodes that must score the floor: each painting is refused by the gate."""
    cases = [
        ("no_sketch", "An empty completion: nothing to paint.", "empty.txt"),
        ("blank_page", "One tiny dot: below the coverage floor.", "blank_canvas.js"),
        (
            "outside_allowlist",
            "brush.set and brush.line: real p5.brush methods, not allowed.",
            "brush_outside_allowlist.js",
        ),
        ("network", "fetch reached through a string-built property of window.", "computed_window_fetch.js"),
        ("eval", "eval runs code from a string.", "eval.js"),
    ]
    return [Trajectory(name=name, why=why, seed=0, actions=[_fixture(file)] * 2) for name, why, file in cases]


def probe() -> dict[str, Any]:
    """OpenEnv's runtime plan (`RuntimePlan`, schema 1): the oracle's episode under a fixed episode id and seed."""
    episode = oracle()
    return {
        "plan_schema_version": "1",
        "reset": {"episode_id": "probe", "seed": episode.seed, "options": {"prompt": episode.prompt}},
        "actions": [PaintAction(sketch=sketch).model_dump(include={"sketch"}) for sketch in episode.actions],
    }


# The best of the 30 pool and bench sketches under the offline preset at seeds 0 and 7 when the stand-ins read hue
# (0.940 at both; 0.931 since they name colours by colour words); the next best then reached 0.924 and 0.910. docs/openenv.md, the oracle.
ORACLE_SKETCH = "peach_hibiscus_small.js"
ORACLE_SEED = 7


async def play(env: Any, trajectory: Trajectory) -> list[PaintObservation]:
    """Play `trajectory` on an in-process `PaintingEnvironment`: the reset's observation, then each painting's."""
    observations = [env.reset(seed=trajectory.seed, episode_id=trajectory.name, prompt=trajectory.prompt)]
    for sketch in trajectory.actions:
        observations.append(await env.step_async(PaintAction(sketch=sketch)))
    return observations


async def play_remote(url: str, trajectory: Trajectory, timeout_s: float = 600.0) -> list[PaintObservation]:
    """Play `trajectory` through the server at `url`, one session."""
    from openenv_painting.client import PaintingClient

    async with PaintingClient(base_url=url, message_timeout_s=timeout_s) as client:
        first = await client.reset(seed=trajectory.seed, episode_id=trajectory.name, prompt=trajectory.prompt)
        observations = [first.observation]
        for sketch in trajectory.actions:
            observations.append((await client.step(PaintAction(sketch=sketch))).observation)
    return observations


def files() -> dict[str, str]:
    """The shipped validation files, by name, as they must read."""

    def dump(value: Any) -> str:
        return json.dumps(value, indent=1) + "\n"

    return {
        "runtime.json": dump(probe()),
        "oracle.json": dump(oracle().model_dump()),
        "canaries.json": dump([canary.model_dump() for canary in canaries()]),
    }


def main(argv: list[str] | None = None) -> None:
    """`python -m openenv_painting.trajectories`: write the validation files."""
    argparse.ArgumentParser(description="Write the probe, oracle and canary episodes.").parse_args(argv)
    VALIDATION.mkdir(exist_ok=True)
    for name, text in files().items():
        (VALIDATION / name).write_text(text)


if __name__ == "__main__":
    main()
