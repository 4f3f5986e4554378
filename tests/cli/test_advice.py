"""Every command the product advises in what it prints (an error, a log line, an artifact, a help text) is one the
program it names accepts: each backticked `watercolour ...`, `make ...`, `python -m ...` or `prefect ...` in a string of
the product's code is found, its placeholders filled with real values, and parsed by that program (or, for a module
run with `python -m`, its `--help` lists every option advised). A command that runs a long job is parsed, not run."""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.house.test_import_graph import PACKAGES


ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ("watercolour ", "make ", "python -m ", "prefect ", "docker ")
# Options advised without their command, and the command each belongs to (the advice says which beside it). Any other
# backticked option is advice no one can follow.
OPTIONS_OF = {"renderers/isolation.py": "podman run"}
SCANNED = (*PACKAGES, "containers", "scorer_space")
# What the user fills in, as the advice writes it, and an example of it for the test to fill in.
METAVARS = {"URL": "http://127.0.0.1:9/v1", "MODEL": "a-model", "PRESET": "smoke", "<preset>": "smoke"}
# Where a command is advised to run, when not at the repository's root (the advice says so beside it).
WORKING_DIR = {"python -m uvicorn app:app": "scorer_space"}


def printed_strings(tree: ast.Module) -> list[tuple[int, str]]:
    """Every string literal of a module but its docstrings, an f-string's fields written as `{expression}`."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    parts_of_fstrings = {
        id(value) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for value in node.values
    }
    strings = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                value.value if isinstance(value, ast.Constant) else "{" + ast.unparse(value.value) + "}"  # type: ignore[attr-defined]
                for value in node.values
            )
            strings.append((node.lineno, text))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings | parts_of_fstrings
        ):
            strings.append((node.lineno, node.value))
    return strings


def advice() -> list[tuple[str, str]]:
    """(where, command) for every backticked command in the product's strings."""
    found = []
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, text in printed_strings(ast.parse(path.read_text())):
                for command in re.findall(r"`([^`]+)`", text):
                    if command.startswith(PROGRAMS):
                        found.append((f"{path.relative_to(ROOT)}:{line}", command))
                    elif command.startswith("-"):
                        program = OPTIONS_OF.get(str(path.relative_to(ROOT)), "(no command)")
                        found.append((f"{path.relative_to(ROOT)}:{line}", f"{program} {command}"))
    return found


ADVICE = advice()


@pytest.fixture
def values(tmp_path) -> dict[str, str]:
    """A real value for every f-string field an advised command holds."""
    candidates = tmp_path / "candidates"
    candidates.mkdir()
    (candidates / "candidates.jsonl").write_text("")
    return {
        "{folder}": str(candidates),
        "{text}": str(candidates),
        "{args.out}": str(candidates),
        "FOLDER": str(candidates),
        "{pool_dir}": str(tmp_path / "pool"),
        "{runtime.flow_run.id}": "0b4c6c3e-6b1a-4b8e-9d55-2f0c3e7a1d42",
    }


def filled(command: str, values: dict[str, str]) -> list[str]:
    """The command as a user types it: fields and metavars replaced, words split as a shell splits them."""
    for name, value in {**values, **METAVARS}.items():
        command = re.sub(rf"(?<![\w<]){re.escape(name)}(?![\w>])", value, command)
    assert "{" not in command.replace('{"', ""), f"no value for a field of `{command}`: add one to `values`"
    return shlex.split(command.replace("=...", "={}"))


def test_the_product_advises_commands():
    # The scan itself works: it finds the advice the pool's messages give.
    assert any(command.startswith("watercolour pool rate") for _, command in ADVICE)
    assert any(command.startswith("prefect deployment run") for _, command in ADVICE)


@pytest.mark.parametrize(("where", "command"), ADVICE, ids=[where for where, _ in ADVICE])
def test_advised_command_is_accepted_by_its_program(where, command, values, capsys):
    argv = filled(command, values)
    if argv[0] == "watercolour":
        watercolour_accepts(argv[1:], capsys)
    elif argv[0] == "make":
        made = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True, text=True, check=False)
        assert made.returncode == 0, made.stderr
    elif argv[0] == "python":
        python_module_accepts(argv[2], argv[3:], ROOT / WORKING_DIR.get(command, "."))
    elif argv[0] == "prefect":
        prefect_accepts(argv[1:])
    elif argv[0] in ("docker", "podman"):
        container_run_accepts(argv)
    else:
        pytest.fail(f"{where} advises `{command}` without the command it belongs to")


def watercolour_accepts(argv: list[str], capsys) -> None:
    from watercolour.cli import parser_for
    from watercolour.commands.arguments import run_config

    try:
        args = parser_for(argv).parse_args(argv)
    except SystemExit:
        pytest.fail(capsys.readouterr().err)
    if args.command == "train":
        run_config(args.preset, args.overrides)  # the overrides name real settings


def python_module_accepts(module: str, argv: list[str], cwd: Path) -> None:
    helped = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert helped.returncode == 0, helped.stderr
    for word in argv:
        if word.startswith("-"):
            assert word.split("=")[0] in helped.stdout, f"python -m {module} has no option {word}"
        elif ":" in word:  # an ASGI app, `module:attribute`, in the working directory
            source, attribute = word.split(":")
            tree = ast.parse((cwd / f"{source}.py").read_text())
            bound = {target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets}
            assert attribute in bound, f"{cwd.name}/{source}.py binds no {attribute}"


def prefect_accepts(argv: list[str]) -> None:
    import prefect.cli  # noqa: F401  (registers the commands)
    from prefect.cli._app import _app  # Prefect's command line, parsed without running a command
    from prefect.flows import load_flow_from_entrypoint

    from deployments.presets import load_config

    command, bound, _ = _app.parse_args(argv, exit_on_error=False, print_error=False)
    if command.__name__ != "run" or argv[0] != "deployment":
        return
    flow_name, deployment_name = bound.arguments["name"].split("/")
    deployments = {
        entry["name"]: entry for entry in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]
    }
    assert deployment_name in deployments, f"prefect.yaml has no deployment {deployment_name}"
    deployment = deployments[deployment_name]
    path, function = deployment["entrypoint"].split(":")
    flow = load_flow_from_entrypoint(f"{ROOT / path}:{function}")
    assert flow.name == flow_name
    parameters = dict(pair.split("=", 1) for pair in bound.arguments.get("params", []))
    assert set(parameters) <= set(flow.parameters.properties), f"{flow_name} takes no {set(parameters)}"
    if "overrides" in parameters:  # Prefect reads a parameter's value as JSON
        load_config(deployment.get("parameters", {})["preset"], json.loads(parameters["overrides"]))


def container_run_accepts(argv: list[str]) -> None:
    if shutil.which(argv[0]) is None:
        pytest.skip(f"no {argv[0]} client here")
    helped = subprocess.run([argv[0], "run", "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert helped.returncode == 0, helped.stderr
    for word in argv[2:]:
        if word.startswith("-"):
            assert re.search(rf"{re.escape(word.split('=')[0])}\b", helped.stdout), f"{argv[0]} run has no {word}"
