"""`python scripts/run_log.py FLOW_RUN [--level LEVEL]`: a flow run's log with the task that wrote each line.

`prefect flow-run logs` labels every line with the flow run only, so its many "Finished in state Completed()"
lines do not say which task finished. This prints the same log from the same API, one line each, with the task
run's name in place of the flow run's (`flow` for the flow's own lines); `scripts/prefect-local.sh logs` runs it.
FLOW_RUN is the flow run's id or its name (`warm-chamois`).

    2026-12-03 10:15:02 | INFO    | grpo_train-3f1       | step 1/3 | reward 0.412 (best 0.610) | gate 100% | ...
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any
from uuid import UUID


PAGE = 200  # the server's default and largest page


def find_flow_run(client: Any, flow_run: str) -> Any:
    """The flow run with this id, else the one with this name; LookupError when there is none."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
    from prefect.exceptions import ObjectNotFound

    try:
        return client.read_flow_run(UUID(flow_run))
    except ValueError:
        pass
    except ObjectNotFound:
        raise LookupError(f"no flow run has the id {flow_run}") from None
    runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[flow_run])), limit=2)
    if not runs:
        raise LookupError(f"no flow run is named {flow_run!r}")
    if len(runs) > 1:
        raise LookupError(f"more than one flow run is named {flow_run!r}: pass its id")
    return runs[0]


def run_log_lines(flow_run: str, level: int = logging.INFO) -> list[str]:
    """The flow run's log at `level` and above, oldest first, each line labelled with the task run that wrote it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        LogFilter,
        LogFilterFlowRunId,
        LogFilterLevel,
        TaskRunFilter,
        TaskRunFilterId,
    )
    from prefect.client.schemas.sorting import LogSort

    with get_client(sync_client=True) as client:
        run = find_flow_run(client, flow_run)
        log_filter = LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id]), level=LogFilterLevel(ge_=level))
        logs: list[Any] = []
        while page := client.read_logs(log_filter, limit=PAGE, offset=len(logs), sort=LogSort.TIMESTAMP_ASC):
            logs += page
            if len(page) < PAGE:
                break
        wanted = sorted({log.task_run_id for log in logs if log.task_run_id is not None}, key=str)
        names: dict[UUID, str] = {}
        for start in range(0, len(wanted), PAGE):
            chunk = wanted[start : start + PAGE]
            for task_run in client.read_task_runs(
                task_run_filter=TaskRunFilter(id=TaskRunFilterId(any_=chunk)), limit=PAGE
            ):
                names[task_run.id] = task_run.name
    width = max((len(name) for name in names.values()), default=4)
    lines = []
    for log in logs:
        who = names.get(log.task_run_id, "task run") if log.task_run_id is not None else "flow"
        when = f"{log.timestamp:%Y-%m-%d %H:%M:%S}"
        lines.append(f"{when} | {logging.getLevelName(log.level):7s} | {who:{width}s} | {log.message}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("flow_run", help="the flow run's id or name")
    parser.add_argument("--level", default="INFO", help="the lowest level shown (default INFO; DEBUG shows all)")
    args = parser.parse_args(argv)
    level = logging.getLevelName(args.level.upper())
    if not isinstance(level, int):
        parser.error(f"--level: {args.level!r} is not a logging level (DEBUG, INFO, WARNING, ERROR, CRITICAL)")
    try:
        lines = run_log_lines(args.flow_run, level)
    except LookupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
