"""The Prefect Automation that ends a training run nobody is watching: no heartbeat, so Crashed.

A flow run sends a heartbeat event every `PREFECT_FLOWS_HEARTBEAT_FREQUENCY` seconds (the training deployments set 60
in prefect.yaml). When its process is SIGKILLed (an OOM, say) its worker sees the exit and reports the run Crashed
itself; but when the worker goes too (a lost machine, a killed container) nobody reports anything, and the run stayed
Running in the UI for good. This automation marks a `train` flow run Crashed once a heartbeat is followed by neither
another heartbeat nor a final state for `crash_after_s` seconds. Crashed, from either source, then triggers the
`space-sleep` deployment (its trigger is in prefect.yaml), which puts the run's Space to sleep; if no worker is left
to run it, the Space's own idle timeout, set when the run started, is the last line.

    python -m deployments.automations [--crash-after-s 300]    # create or update it (scripts/prefect-local.sh up)
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture


NAME = "train: no heartbeat -> Crashed"
# Five missed heartbeats at the training deployments' 60 s: a busy step never blocks the heartbeat thread that long.
CRASH_AFTER_S = 300
FINAL = (
    "prefect.flow-run.Completed",
    "prefect.flow-run.Failed",
    "prefect.flow-run.Cancelled",
    "prefect.flow-run.Crashed",
)


def crash_detection(crash_after_s: int = CRASH_AFTER_S) -> AutomationCore:
    """The automation: for each `train` flow run, after a heartbeat expect another (or a final state) in time."""
    return AutomationCore(
        name=NAME,
        description=(
            f"A train flow run that sends no heartbeat for {crash_after_s} s is marked Crashed (its process and its "
            "worker are gone); the space-sleep deployment's trigger then puts its Space to sleep."
        ),
        trigger=EventTrigger(
            posture=Posture.Proactive,
            match={"prefect.resource.id": "prefect.flow-run.*"},
            match_related={"prefect.resource.role": "flow", "prefect.resource.name": "train"},
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.heartbeat", *FINAL},
            for_each={"prefect.resource.id"},
            threshold=1,
            within=timedelta(seconds=crash_after_s),
        ),
        actions=[
            ChangeFlowRunState(
                name="Crashed",
                state=StateType.CRASHED,
                force=False,
                message=f"No heartbeat for {crash_after_s} s: the run's process and its worker are gone. Retry it to "
                "train on from its latest checkpoint.",
            )
        ],
    )


def register(crash_after_s: int = CRASH_AFTER_S) -> str:
    """Create the automation, or bring the one of that name up to date; says which.

    One that is already up to date is left alone: the server forgets an automation's open windows when it is
    updated, so rewriting it while a run was lost (`scripts/prefect-local.sh up` run again to bring a worker back)
    left that run Running for good, its last heartbeat forgotten and no other coming. A changed window (another
    `crash_after_s`) has that cost once: a run already lost by then is not marked Crashed."""
    from prefect.client.orchestration import get_client

    automation = crash_detection(crash_after_s)
    with get_client(sync_client=True) as client:
        existing = client.read_automations_by_name(NAME)
        for extra in existing[1:]:
            client.delete_automation(extra.id)
        if existing:
            current = existing[0].model_dump(mode="json", include=set(AutomationCore.model_fields))
            if current == automation.model_dump(mode="json"):
                return f"automation '{NAME}' ({crash_after_s} s) is up to date"
            client.update_automation(existing[0].id, automation)
            return f"updated automation '{NAME}' ({crash_after_s} s)"
        client.create_automation(automation)
        return f"created automation '{NAME}' ({crash_after_s} s)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deployments.automations", description=__doc__.splitlines()[0])
    parser.add_argument("--crash-after-s", type=int, default=CRASH_AFTER_S, help="Seconds without a heartbeat.")
    print(register(parser.parse_args(argv).crash_after_s))


if __name__ == "__main__":
    main()
