"""`watercolour render` and `watercolour gate` as a person runs them: subprocesses, JSON lines, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import watercolour


FIXTURES = Path(watercolour.__file__).parent / "fixtures" / "gate"


def watercolour_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "watercolour.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def json_lines(stdout: str) -> dict[str, dict]:
    lines = [json.loads(line) for line in stdout.splitlines()]
    return {Path(line["path"]).name: line for line in lines}


@pytest.mark.browser
def test_render_writes_a_png_per_input_even_for_sketches_the_gate_refuses(tmp_path):
    # A `debugger` statement is outside the prompt, so the gate refuses it; in the sketch's compartment it paints.
    flower, refused = FIXTURES / "allowlist_flower.js", FIXTURES / "static" / "debugger_statement.js"
    done = watercolour_cli("render", str(flower), str(refused), "--out", str(tmp_path), "--json", "--size", "300")
    assert done.returncode == 0, done.stderr
    lines = json_lines(done.stdout)
    assert set(lines) == {"allowlist_flower.js", "debugger_statement.js"}
    for name, line in lines.items():
        assert line["ok"] and line["png"] == str(tmp_path / f"{Path(name).stem}.png")
        assert Path(line["png"]).stat().st_size > 1000 and line["coverage"] > 0 and line["render_ms"] > 0
        assert line["width"] == 300
    assert lines["allowlist_flower.js"]["violations"] == []
    assert lines["debugger_statement.js"]["violations"] == ["name_outside_allowlist"]
    assert "[2/2]" in done.stderr


@pytest.mark.browser
def test_gate_reports_a_verdict_per_input_and_extracts_sketches_from_completions():
    inputs = [FIXTURES / name for name in ("prose_around_sketch.md", "refusal.txt", "not_webgl.js")]
    done = watercolour_cli("gate", *map(str, inputs), "--json")
    assert done.returncode == 0, done.stderr
    lines = json_lines(done.stdout)
    assert lines["prose_around_sketch.md"]["passed"] and lines["prose_around_sketch.md"]["coverage"] > 0.01
    assert lines["refusal.txt"] == {**lines["refusal.txt"], "passed": False, "violations": ["no_sketch"]}
    assert lines["not_webgl.js"]["violations"] == ["not_webgl"] and lines["not_webgl.js"]["render_ms"] is None


@pytest.mark.browser
def test_gate_without_json_prints_a_short_line_per_input():
    done = watercolour_cli("gate", str(FIXTURES / "eval.js"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{FIXTURES / 'eval.js'}: refused: external_access"


def test_a_missing_input_is_a_usage_error(tmp_path):
    done = watercolour_cli("gate", str(tmp_path / "nowhere.js"))
    assert done.returncode == 2 and "no such file" in done.stderr


@pytest.mark.parametrize("command", [["gate"], ["render", "--out", "x"]])
def test_no_inputs_is_a_usage_error(command):
    assert watercolour_cli(*command).returncode == 2
