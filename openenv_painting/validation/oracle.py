"""The oracle, as a script (OpenEnv's `oracle.form: script`): play `oracle.json` against the server at `--url`
(default the container's own port) and print the episode's rewards as JSON; exit 1 when the final reward is
below the manifest's declared maximum less its oracle tolerance.

    python openenv_painting/validation/oracle.py --url http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import yaml

from openenv_painting.trajectories import Trajectory, play_remote


HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Play the oracle episode against a running painting server.")
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    args = parser.parse_args(argv)
    trajectory = Trajectory.model_validate_json((HERE / "oracle.json").read_text())
    observations = asyncio.run(play_remote(args.url, trajectory))
    reward = yaml.safe_load((HERE.parent / "openenv.yaml").read_text())["validation"]["reward"]
    reached = reward["range"][1] - reward.get("oracle_tolerance", 0.0)
    final = observations[-1].reward
    print(json.dumps({"rewards": [o.turn_reward for o in observations[1:]], "reward": final, "reached": reached}))
    return 0 if final is not None and final >= reached else 1


if __name__ == "__main__":
    sys.exit(main())
