"""`watercolour score`: files in, the training reward of each out, through the scoring engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewards.scoring.terms import term_names
from watercolour.cli import main


pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).parents[2] / "watercolour" / "fixtures" / "gate"
GOOD, CHEAT = FIXTURES / "allowlist_flower.js", FIXTURES / "bare_ellipse.js"
# Nothing listens on the discard port, so a client aimed there fails like a service that is down.
CLOSED_PORT = "http://127.0.0.1:9"
# One attempt, no backoff: the dead letter is the same, the test does not wait out the retries.
NO_RETRIES = ["--set", "judge.attempts=1", "--set", "aesthetic.attempts=1", "--set", "aesthetic.backoff_s=0"]


def scored(capsys, *argv: str) -> tuple[int, list[dict]]:
    status = main(["score", *argv, "--json"])
    return status, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_offline_preset_scores_a_good_sketch_and_zeroes_a_cheat_with_every_part(capsys, tmp_path):
    status, (good, cheat) = scored(capsys, str(GOOD), str(CHEAT), "--preset", "offline", "--out", str(tmp_path))
    assert status == 0
    assert 0.1 < good["reward"] < 1 and good["dead_letter"] is None and good["violations"] == []
    assert list(good["parts"]) == term_names() and all(value is not None for value in good["parts"].values())
    assert Path(good["png"]).read_bytes().startswith(b"\x89PNG")
    assert cheat["reward"] == 0.0 and "bare_primitives" in cheat["violations"] and cheat["png"] is None
    assert cheat["parts"]["aesthetic"] is None and cheat["parts"]["judge"] is None


def test_dead_services_give_a_null_reward_with_a_dead_letter_and_still_exit_zero(capsys):
    urls = ["--scorer-url", CLOSED_PORT, "--judge-url", CLOSED_PORT]
    status, (good, cheat) = scored(capsys, str(GOOD), str(CHEAT), "--preset", "judge-led", *urls, *NO_RETRIES)
    assert status == 0
    assert good["reward"] is None and good["parts"]["gate"] == 1.0
    assert good["dead_letter"]["stage"] in {"aesthetic", "judge"} and "Connect" in good["dead_letter"]["cause"]
    assert cheat["reward"] == 0.0 and cheat["dead_letter"] is None
    assert "png" not in good


def test_a_missing_file_or_a_bad_preset_is_a_usage_error_that_says_so(capsys, tmp_path):
    for argv, words in (
        (["score", str(tmp_path / "nope.js"), "--preset", "offline"], "no such file"),
        (["score", str(GOOD), "--preset", "no-such-preset"], "choose one of"),
    ):
        with pytest.raises(SystemExit) as exit:
            main(argv)
        assert exit.value.code == 2 and words in capsys.readouterr().err
