"""Throughput paired against another checkout: `python -m bench --scenario throughput --against DIR [--pairs N]`.

A change to the renderer must keep its speed, and on a shared machine two runs minutes apart measure the load as much
as the code. So the throughput scenario runs in this checkout and in DIR (the code before the change: a `git archive`
or worktree that shares this checkout's `.venv` and `node_modules`) alternately, each run in a fresh process with its
own checkout first on the path, the order swapped every pair. The table gives every run, each pair's ratio and the
ratio of the medians (after / before).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path


HERE = Path(__file__).resolve().parents[2]


def throughput(checkout: Path) -> float:
    """Renders a minute of the warm pool, measured by `checkout`'s own code in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-m", "bench", "--scenario", "throughput", "--json"]
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["rows"][0]["per_min"]


def paired(against: Path, pairs: int) -> dict:
    rows = []
    for pair in range(pairs):
        order = [("after", HERE), ("before", against.resolve())]
        measured = {label: throughput(root) for label, root in (order if pair % 2 == 0 else order[::-1])}
        rows.append({"pair": pair + 1, **measured, "ratio": round(measured["after"] / measured["before"], 3)})
    after, before = (statistics.median(row[label] for row in rows) for label in ("after", "before"))
    return {
        "against": str(against),
        "rows": rows,
        "median_after": after,
        "median_before": before,
        "ratio": round(after / before, 3),
    }


def print_paired(report: dict) -> None:
    print(f"throughput (renders/min, warm pool), this checkout against {report['against']}, alternating")
    print(f"{'pair':>4}{'after':>9}{'before':>9}{'ratio':>8}")
    for row in report["rows"]:
        print(f"{row['pair']:>4}{row['after']:>9}{row['before']:>9}{row['ratio']:>8}")
    print(f"median after {report['median_after']}, before {report['median_before']}: ratio {report['ratio']}")
