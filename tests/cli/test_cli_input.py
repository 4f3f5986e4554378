"""Bad input to every command, as a user would type it: one line on stderr, exit code 2, no traceback, nothing
written, and no model loaded first. No browser and no network: every case is refused before either is needed."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from watercolour.cli import main


def refused(argv: list[str], capsys) -> str:
    """Run the CLI in process; assert it exits 2 with one stderr line and nothing on stdout; return that line."""
    with pytest.raises(SystemExit) as exit:
        main(argv)
    out, err = capsys.readouterr()
    assert exit.value.code == 2, (argv, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err and not out, err
    return err.strip()


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    """A working folder with a file where folders are expected, an empty folder and a sketch."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    Path("afile").write_text("x")
    Path("empty").mkdir()
    Path("s.js").write_text("function setup() {}")
    return tmp_path


CASES = [
    # (argv, words the one line must contain)
    ([], "required: COMMAND"),
    (["paint"], "invalid choice"),
    (["render", "s.js", "--out", "afile"], "afile is a file"),
    (["render", "s.js", "--out", "new", "--deadline", "nan"], "finite number greater than 0"),
    (["render", "s.js", "--out", "new", "--deadline", "-1"], "finite number greater than 0"),
    (["render", "s.js", "--out", "new", "--size", "0"], "at least 1"),
    (["render", "s.js", "--out", "new", "--size", "60000"], "larger than 4096"),
    (["gate", "empty"], "empty is a folder, not a file"),
    (["gate", "nowhere.js"], "no such file: nowhere.js"),
    (["gate", "s.js", "--deadline", "inf"], "finite number"),
    (["gate", "s.js", "--seed", "one"], "invalid int value"),
    (["train", "--preset", "nope"], "unknown preset 'nope': choose one of"),
    (["train", "--preset", "smoke", "training.steps=abc"], "valid integer"),
    (["train", "--preset", "smoke", "--steps", "-3"], "at least 1"),
    (["train", "--preset", "smoke", "steps"], "is not key=value"),
    (["train", "--preset", "smoke", "training.stepz=2"], "did you mean training.steps?"),
    (["train", "--preset", "smoke", "weights.judge=2"], "less than or equal to 1"),
    (["train", "--preset", "smoke", "weights.judge=0.5"], "weights must sum to 1"),
    (["train", "--preset", "smoke", "training.steps=[1"], "not valid YAML"),
    (["train", "--preset", "smoke", "--run-dir", "afile"], "afile is a file"),
    (["train", "--preset", "smoke", "run_dir=afile"], "run_dir: afile cannot be a folder"),
    (["train", "--preset", "smoke", "pool_dir=empty"], "no reference pool at empty"),
    (["train", "--preset", "smoke", "training.start_adapter=empty"], "holds no adapter_config.json"),
    (["train", "--preset", "judge-led", "--run-dir", "new"], "aesthetic.url is required"),
    (["train", "--preset", "repaint", "repaint.turns=0"], "greater than or equal to 1"),
    (["train", "--preset", "repaint", "repaint.reward=best"], "'final' or 'improvement'"),
    (["train", "--preset", "repaint-judge-led", "--run-dir", "new"], "aesthetic.url is required"),
    (["warmstart", "--preset", "smoke", "--epochs", "nan"], "finite number greater than 0"),
    (["warmstart", "--preset", "smoke", "--examples", "0"], "at least 1"),
    (["evaluate", "--adapter", "nowhere"], "no such folder: nowhere"),
    (["evaluate", "--adapter", "afile", "--preset", "smoke"], "afile is a file, not a folder"),
    (["evaluate", "--adapter", "empty", "--preset", "smoke"], "empty holds no adapter_config.json"),
    (["evaluate", "--adapter", "empty", "--n", "0"], "at least 1"),
    (["space", "status", "me/space", "--timeout-s", "nan"], "finite number"),
    (["space", "sleep", "me/space", "--idle-s", "-1"], "at least 1"),
    (["space", "status", "me/space"], "$HF_TOKEN is not set"),
    (["pool", "generate", "--endpoints", "localhost", "--models", "m", "--out", "new"], "not an http(s) URL"),
    (["pool", "generate", "--endpoints", "http://a/v1", "--models", "m", "--out", "afile"], "afile is a file"),
    (
        ["pool", "generate", "--endpoints", "http://a/v1,http://b/v1", "--models", "m,n,o", "--out", "new"],
        "2 endpoints for 3 models",
    ),
    (["pool", "generate", "--endpoints", "http://a/v1", "--models", "m", "--out", "new", "--rounds", "1"], "critic"),
    (
        ["pool", "generate", "--endpoints", "http://a/v1", "--models", "m", "--out", "new", "--photos", "empty"],
        "no attribution.json",
    ),
    (["pool", "rate", "empty"], "no candidates.jsonl in empty"),
    (["pool", "rate", "empty", "--port", "70000"], "no candidates.jsonl"),
    (["pool", "pack", "afile", "--out", "new"], "afile is a file"),
    (["pool", "pack", "--out", "new"], "either a candidate folder or --bundled"),
    (["pool", "pack", "--bundled", "--out", "afile"], "afile is a file"),
    (["pool", "calibrate", "--paintings", "empty"], "no PNG paintings at empty"),
    (["pool", "calibrate", "--pool", "empty", "--paintings", "empty"], "not a reference pool"),
    (["pool", "calibrate", "--judge-preset", "openai", "--paintings", "empty"], "needs --judge-url"),
    (["pool", "calibrate", "--paintings", "empty", "--out", "empty"], "is a folder; name a file"),
    (["pool", "refresh", "--pool", "afile"], "afile is a file"),
    (["demo", "--out", "afile"], "afile is a file"),
    (["demo", "--set", "training.num_generationz=16"], "did you mean training.num_generations"),
    (["score", "nowhere.js", "--preset", "offline"], "no such file: nowhere.js"),
    (["score", "s.js", "--preset", "nope"], "unknown preset 'nope'"),
    (["score", "s.js", "--preset", "offline", "--scorer-url", "localhost:8000"], "not an http(s) URL"),
    (["score", "s.js", "--preset", "offline", "--set", "weights.judge=7"], "less than or equal to 1"),
    (["score", "s.js", "--preset", "judge-led"], "aesthetic.url is required"),
    (["score", "s.js", "--preset", "offline", "--out", "afile"], "afile is a file"),
    (["judge", "review"], "invalid choice"),
    (["judge", "audit", "--pool", "empty"], "not a reference pool"),
    (["judge", "audit", "--run", "empty"], "holds no rendered rollouts"),
    (["judge", "audit", "--pairs", "0"], "at least 1"),
    (["judge", "audit", "--out", "afile"], "afile is a file"),
    (["judge", "hacks", "--preset", "judge-led"], "aesthetic.url is required"),
    (["rehearse"], "one of the arguments --preset --report --route is required"),
    (["rehearse", "--preset", "nope"], "unknown preset 'nope'"),
    (["rehearse", "--preset", "smoke", "--steps", "0"], "at least 1"),
    (["rehearse", "--preset", "smoke", "--processes", "0"], "at least 1"),
    (["rehearse", "--preset", "smoke", "--project-steps", "-1"], "at least 1"),
    (["rehearse", "--preset", "smoke", "training.stepz=2"], "did you mean training.steps?"),
    (["rehearse", "--preset", "smoke", "--run-dir", "afile"], "afile is a file"),
    (["rehearse", "--report", "empty"], "empty holds no config.yaml"),
    (["rehearse", "--report", "afile"], "afile is a file, not a folder"),
]


@pytest.mark.parametrize(("argv", "words"), CASES, ids=[" ".join(argv)[:60] for argv, _ in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(argv, words, inputs, capsys):
    before = sorted(p.name for p in inputs.iterdir())
    line = refused(argv, capsys)
    assert line.startswith("watercolour") and words in line, line
    assert sorted(p.name for p in inputs.iterdir()) == before, "nothing is written"


def test_a_missing_pool_is_refused_before_any_model_library_loads(tmp_path):
    # A fresh interpreter, so what it imported is the command's doing: the pool is checked before torch loads.
    probe = (
        "import sys\nfrom watercolour.cli import main\n"
        f"try:\n    main(['train', '--preset', 'smoke', 'pool_dir={tmp_path / 'nowhere'}'])\n"
        "except SystemExit as exit:\n    print(exit.code, 'torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.split() == ["2", "False", "False"], done.stderr
    assert done.stderr.strip().endswith("or omit the path to use the bundled seed pool")


def test_every_command_is_tried_here():
    from watercolour.cli import COMMANDS

    assert {argv[0] for argv, _ in CASES if argv} >= set(COMMANDS)


def test_a_registered_terms_weight_is_a_setting_and_an_unregistered_one_is_not(monkeypatch):
    from rewards.scoring import terms
    from watercolour.commands.arguments import override

    registered = {**terms.reward_terms(), "toy": terms.GATE_TERM}
    monkeypatch.setattr(terms, "reward_terms", lambda: registered)
    assert override("weights.toy=0.1") == ("weights.toy", 0.1)
    with pytest.raises(argparse.ArgumentTypeError, match="less than or equal to 1"):
        override("weights.toy=2")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown setting 'weights.toyz'"):
        override("weights.toyz=0.1")


def test_a_replaced_generation_setting_on_the_command_line_names_its_replacement() -> None:
    from ground.run_config import REPLACED_SETTINGS
    from watercolour.commands.arguments import override

    with pytest.raises(argparse.ArgumentTypeError) as refused:
        override("training.generation_compile=false")
    assert str(refused.value) == REPLACED_SETTINGS["training.generation_compile"]
    assert override("training.generation=trl") == ("training.generation", "trl")
