"""The package tree has no import cycle: every import, at module level or inside a function, points one way."""

from __future__ import annotations

import ast
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("watercolour", "renderers", "rewards", "tasks", "flows", "deployments", "openenv_painting")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (a `from package import module` counts as the module)."""
    files = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    modules = {module_name(path) for path in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from package import submodule` imports the submodule; `from module import name`, the module.
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    imported.add(submodule if submodule in modules else node.module)
        graph[module_name(path)] = {name for name in imported if name in modules} - {module_name(path)}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_no_module_imports_itself_through_others():
    graph = import_graph()
    assert "rewards.judge" in graph and graph["rewards.offline_judge"]  # the graph was read
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph) or [])}"


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_tasks_and_flows_hold_prefect_code_only():
    # Each module there imports Prefect (directly, or through a sibling of tasks/ for the flows' hooks).
    for folder in ("tasks", "flows"):
        for path in (ROOT / folder).glob("*.py"):
            if path.name != "__init__.py":
                text = path.read_text()
                assert "from prefect" in text or "import prefect" in text, f"{path.name} holds no Prefect code"
