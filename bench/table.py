"""The table the timing benchmarks print: per path, the median, fastest and slowest of its timed repetitions."""

from __future__ import annotations

import statistics


def seconds_table(seconds: dict[str, list[float]], caption: str) -> str:
    """One line per path (median, min, max seconds), under a header that ends with `caption`."""
    width = max(len("path"), *(len(path) for path in seconds)) + 2
    lines = [f"{'path':{width}} {'median s':>9} {'min s':>7} {'max s':>7}   ({caption})"]
    for path, values in seconds.items():
        lines.append(f"{path:{width}} {statistics.median(values):>9.2f} {min(values):>7.2f} {max(values):>7.2f}")
    return "\n".join(lines)
