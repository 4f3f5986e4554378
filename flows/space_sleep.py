"""The `space-sleep` flow: pause a Space now, or let it sleep when idle, on demand or after a crashed run.

The `train` flow sleeps its scorer Space itself; this flow is for everything else: a run that was killed before
its hooks could run, or a Space left up by hand. Its deployment's trigger (prefect.yaml) runs it for every `train` flow
run that ends Crashed, with `crashed_run` naming that run: its Space is the one its preset and overrides name
(a run killed with SIGKILL is reported Crashed by its worker; one whose worker went too, by the heartbeat
automation, `deployments.automations`).
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from prefect import flow, get_run_logger

from ground.run_config import SpaceSettings
from tasks.space import put_space_to_sleep


@flow(name="space-sleep", log_prints=True)
def space_sleep(
    repo_id: str | None = None,
    mode: Literal["pause", "sleep"] = "pause",
    idle_s: int = 900,
    endpoint: str = "https://huggingface.co",
    token_env: str = "HF_TOKEN",
    crashed_run: str | None = None,
) -> str:
    """Pause `repo_id` (billing stops now) or set it to sleep after `idle_s` seconds idle; idempotent. With
    `crashed_run` (a flow run id, or its event resource id `prefect.flow-run.<id>`), the Space is that run's."""
    if crashed_run is not None:
        settings = space_of_run(UUID(crashed_run.removeprefix("prefect.flow-run.")))
        if settings is None:
            return f"flow run {crashed_run} names no Space: nothing to sleep"
        settings = settings.model_copy(update={"at_end": mode})
    elif repo_id is not None:
        settings = SpaceSettings(repo_id=repo_id, endpoint=endpoint, token_env=token_env, at_end=mode, idle_s=idle_s)
    else:
        raise ValueError("name the Space (repo_id) or the crashed run whose Space it is (crashed_run)")
    outcome = put_space_to_sleep(settings, mode)
    print(f"Space {settings.repo_id}: {outcome}")
    return outcome


def space_of_run(flow_run_id: UUID) -> SpaceSettings | None:
    """The Space a `train` flow run's configuration names (its preset and overrides), or None."""
    from prefect.client.orchestration import get_client

    from flows.train import space_of

    with get_client(sync_client=True) as client:
        parameters = client.read_flow_run(flow_run_id).parameters
    get_run_logger().info("the Space of flow run %s", flow_run_id)
    return space_of(parameters)
