"""The violation codes are one list: every code has its stages and wording, the gate's table lists exactly those codes
at those stages, and the observation words each code from the list, with no fallback for one outside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from episodes.observation import problems
from ground.records import GateVerdict, Stage, ViolationCode
from rewards import gate


DOCS = Path(__file__).resolve().parents[2] / "docs" / "reward.md"


def gate_table() -> dict[str, tuple[Stage, ...]]:
    """Code -> stages, read from the rows of the table in `rewards.gate`'s docstring."""
    assert gate.__doc__ is not None
    rows = [line.split(" | ") for line in gate.__doc__.splitlines() if line.startswith("| `")]
    table = {cells[0].strip("| `"): tuple(Stage(stage) for stage in cells[1].split(", ")) for cells in rows}
    assert len(table) == len(rows), "a code has two rows in the gate's table: give it one row with every stage"
    return table


def test_every_violation_code_has_a_stage_and_wording():
    for code in ViolationCode:
        assert code.stages and code.wording.strip(), code


def test_gate_table_lists_exactly_the_codes_with_their_stages():
    assert gate_table() == {code.value: code.stages for code in ViolationCode}


def test_reward_docs_count_the_codes_the_enum_holds():
    assert f"the table of all {len(ViolationCode)} codes" in DOCS.read_text()


def test_observation_words_every_code_in_the_enum_words():
    verdict = GateVerdict(passed=False, violations=[code.value for code in ViolationCode])
    assert problems(verdict) == [code.wording for code in ViolationCode]


def test_observation_refuses_a_code_outside_the_enum():
    with pytest.raises(ValueError, match="not_a_code"):
        problems(GateVerdict(passed=False, violations=["not_a_code"]))
