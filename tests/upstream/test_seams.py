"""TRL's and transformers' seams: each recorded signature is the installed upstream's, the list holds every override
of a private upstream method, and a trainer refuses other versions in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from watercolour.upstream.seams import SEAMS, WRITTEN_FOR, Seam, UpstreamMoved, check_upstream, resolve, signature


@pytest.mark.parametrize("seam", SEAMS, ids=[seam.upstream.split(":")[1] for seam in SEAMS])
def test_each_seam_was_written_against_the_installed_upstream_signature(seam: Seam) -> None:
    assert signature(seam.upstream) == seam.signature, f"{seam.upstream} moved: check {seam.ours} against it"
    assert resolve(seam.ours) is not None


def test_every_override_of_a_private_upstream_method_is_a_seam() -> None:
    from trl import GRPOTrainer

    from watercolour.training.trainer import TimedGRPOTrainer

    upstream = {name for cls in GRPOTrainer.__mro__ for name in vars(cls)}
    private = {name for name in vars(TimedGRPOTrainer) if name.startswith("_") and not name.startswith("__")}
    overridden = {f"watercolour.training.trainer:TimedGRPOTrainer.{name}" for name in private & upstream}
    assert overridden == {seam.ours for seam in SEAMS if seam.ours.startswith("watercolour.training.trainer:")}


def test_the_seams_name_the_locked_versions() -> None:
    lock = (Path(__file__).parents[2] / "requirements.lock").read_text()
    pinned = dict(re.findall(r"^(trl|transformers)==(\S+)$", lock, re.MULTILINE))
    assert pinned == WRITTEN_FOR
    check_upstream()  # the installed environment is the locked one


def test_a_trainer_refuses_another_version_in_one_line_that_says_what_to_do() -> None:
    with pytest.raises(UpstreamMoved) as refused:
        check_upstream({"trl": "1.17.0", "transformers": "5.23.0"})
    message = str(refused.value)
    assert "\n" not in message
    assert "trl 1.16.0 and transformers 5.23.0" in message and "this environment has trl 1.17.0:" in message
    assert message.split("this environment has ")[1].startswith(
        "trl 1.17.0: install the locked versions (`make setup`)"
    )


def test_building_a_trainer_checks_the_versions_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from watercolour.training.trainer import TimedGRPOTrainer
    from watercolour.upstream import seams

    monkeypatch.setitem(seams.WRITTEN_FOR, "transformers", "5.22.0")  # written for another version than installed
    with pytest.raises(UpstreamMoved, match="this environment has transformers 5.23.0: install"):
        TimedGRPOTrainer(model=None)
