"""The `space-sleep` flow: pause a Space now, or let it sleep when idle, on demand or after a crashed run.

The `train` flow sleeps its scorer Space itself; this flow is for everything else: a run that was killed before
its hooks could run, a Space left up by hand, or a Prefect Automation on `prefect.flow-run.Crashed`.
"""

from __future__ import annotations

from typing import Literal

from prefect import flow

from ground.run_config import SpaceSettings
from tasks.space import put_space_to_sleep


@flow(name="space-sleep", log_prints=True)
def space_sleep(
    repo_id: str,
    mode: Literal["pause", "sleep"] = "pause",
    idle_s: int = 900,
    endpoint: str = "https://huggingface.co",
    token_env: str = "HF_TOKEN",
) -> str:
    """Pause `repo_id` (billing stops now) or set it to sleep after `idle_s` seconds idle; idempotent."""
    settings = SpaceSettings(repo_id=repo_id, endpoint=endpoint, token_env=token_env, at_end=mode, idle_s=idle_s)
    outcome = put_space_to_sleep(settings, mode)
    print(f"Space {repo_id}: {outcome}")
    return outcome
