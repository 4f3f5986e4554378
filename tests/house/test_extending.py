"""docs/extending.md followed as written: its new preset loads through the presets folder and prints what the page
says, and its new flow's module and deployment entry give the flow and the deployment name the page names."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from deployments import presets


DOCS = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


def section(title: str) -> str:
    return DOCS.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(text: str, language: str) -> list[str]:
    """The fenced blocks of `language` in `text`, without their fences."""
    return [part.split("\n```\n", 1)[0] + "\n" for part in text.split(f"```{language}\n")[1:]]


def test_the_pages_preset_extends_smoke_and_loads_to_what_the_page_prints(tmp_path: Path, monkeypatch) -> None:
    recipe = section("A new preset")
    preset_yaml, deployment_yaml = blocks(recipe, "yaml")
    name = preset_yaml.splitlines()[0].removeprefix("# deployments/presets/").removesuffix(".yaml")
    folder = tmp_path / "presets"
    shutil.copytree(Path(str(presets.PRESETS_DIR)), folder)
    (folder / f"{name}.yaml").write_text(preset_yaml)
    monkeypatch.setattr(presets, "PRESETS_DIR", folder)

    check = blocks(recipe, "bash")[0]
    printed = check.split("# ", 1)[1].strip()
    config = presets.load_config(name)
    assert f"{config.name} {config.weights} {config.training.steps} {config.training.model}" == printed
    assert config.training.num_generations == presets.load_config("smoke").training.num_generations
    # The page's deployment entry runs this preset through the train flow.
    (entry,) = yaml.safe_load(deployment_yaml.replace("*training_process", "training"))
    assert entry["parameters"] == {"preset": name} and entry["entrypoint"] == "flows/train.py:train"


def test_the_pages_flow_loads_from_its_deployment_entry(tmp_path: Path) -> None:
    from prefect.flows import load_flow_from_entrypoint

    recipe = section("A new flow")
    module = blocks(recipe, "python")[0]
    path = module.splitlines()[0].removeprefix("# ")
    (entry,) = yaml.safe_load(blocks(recipe, "yaml")[0].replace("*local_process", "local"))
    assert entry["entrypoint"].split(":")[0] == path
    (tmp_path / Path(path).name).write_text(module)
    flow = load_flow_from_entrypoint(f"{tmp_path / Path(path).name}:{entry['entrypoint'].split(':')[1]}")
    name = f"{flow.name}/{entry['name']}"
    assert name in recipe.split("```bash", 1)[1] and f"prefect deployment run {name}" in recipe
    assert sorted(flow.parameters.properties) == ["overrides", "preset"]
