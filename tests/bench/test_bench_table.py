"""The timing benchmarks' shared table."""

from __future__ import annotations

from bench.table import seconds_table


def test_each_path_gets_its_median_fastest_and_slowest_under_the_caption():
    table = seconds_table({"one by one": [15.5, 13.1, 15.8], "ahead": [12.8, 12.3, 13.2]}, "8 episodes").splitlines()
    assert table[0].startswith("path") and table[0].endswith("(8 episodes)")
    assert table[1].split() == ["one", "by", "one", "15.50", "13.10", "15.80"]
    assert table[2].split() == ["ahead", "12.80", "12.30", "13.20"]
