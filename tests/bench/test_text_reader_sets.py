"""`python -m bench.text_reader --forged` reads the newest held-out set of forged writing unless told another."""

from __future__ import annotations

import pytest

from bench import text_reader


def test_the_held_out_sets_are_ordered_by_number_and_the_newest_is_the_default(monkeypatch):
    sets = text_reader.held_out_sets()
    assert sets[0] == "held_out" and len(sets) >= 2
    assert [int(name.rpartition("_")[2]) for name in sets[1:]] == list(range(2, len(sets) + 1))
    read: list[str] = []
    monkeypatch.setattr(text_reader, "forged_groups", lambda kind: read.append(kind) or {})
    monkeypatch.setattr(text_reader, "read_all", lambda groups: _nothing())
    monkeypatch.setattr(text_reader, "forged_table", lambda reads: "")
    text_reader.main(["--forged"])
    text_reader.main(["--forged", "held_out_2"])
    assert read == [sets[-1], "held_out_2"]
    with pytest.raises(SystemExit):
        text_reader.main(["--forged", "tuning"])  # the set the check is tuned on is not a held-out set


async def _nothing() -> dict:
    return {}
