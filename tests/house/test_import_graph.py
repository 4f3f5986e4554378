"""The house's floors: every import, at module level or inside a function, points down or sideways, never up, and
no import runs in a circle.

A module's floor is its folder's (the longest entry of FLOORS its name starts with). The README's layout table
lists the same floors, top first.
"""

from __future__ import annotations

import ast
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "ground",
    "episodes",
    "watercolour",
    "renderers",
    "rewards",
    "tasks",
    "flows",
    "deployments",
    "openenv_painting",
)
# Bottom first. A folder imports only from its own floor and the floors below it.
FLOORS: list[tuple[str, ...]] = [
    ("ground",),
    ("renderers",),
    ("rewards", "rewards.picture"),
    ("rewards.judging",),
    ("rewards.scoring",),
    ("episodes", "deployments"),
    ("openenv_painting",),
    (
        "watercolour.policy",
        "watercolour.pipeline",
        "watercolour.run_records",
        "watercolour.operations",
        "watercolour.rehearsal",
        "watercolour.upstream",
    ),
    ("watercolour.judge_trust", "watercolour.pool"),
    ("watercolour.training",),
    ("watercolour.commands", "watercolour.cli", "watercolour"),
    ("tasks",),
    ("flows",),
]


def floor_of(module: str) -> int:
    """The floor of `module`: that of the longest FLOORS entry it is, or lies inside."""
    matches = [
        (len(folder), floor)
        for floor, folders in enumerate(FLOORS)
        for folder in folders
        if module == folder or module.startswith(folder + ".")
    ]
    if not matches:
        raise AssertionError(f"{module} stands on no floor: add its folder to FLOORS (and to the README's table)")
    return max(matches)[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a module to one on a higher floor, as 'a (floor m) -> b (floor n)'."""
    return [
        f"{module} (floor {floor_of(module)}) -> {target} (floor {floor_of(target)})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if floor_of(target) > floor_of(module)
    ]


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
    assert "rewards.judging.judge" in graph and graph["rewards.judging.offline_judge"]  # the graph was read
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph) or [])}"


def test_no_module_imports_from_a_floor_above_its_own():
    graph = import_graph()
    assert len(graph) > 100  # the graph was read
    assert upward_imports(graph) == []


def test_the_ground_floor_imports_nothing_of_the_project():
    graph = import_graph()
    ground = {module: targets for module, targets in graph.items() if floor_of(module) == 0}
    assert ground and all(target.startswith("ground") for targets in ground.values() for target in targets)


def test_reward_terms_never_see_the_run_configuration():
    # The engine and the terms take `ground.settings.ScoringSettings`; the run configuration stays above them.
    graph = import_graph()
    reaching = sorted(
        module for module, targets in graph.items() if module.startswith("rewards") and "ground.run_config" in targets
    )
    assert reaching == []


def test_the_registry_lists_term_modules_that_stand_below_it():
    # The registry imports its term modules by name, which the graph above cannot read: they must stand on its floor
    # or below, and exist.
    from rewards.scoring.terms import TERM_MODULES

    graph = import_graph()
    assert all(module in graph for module in TERM_MODULES)
    assert [module for module in TERM_MODULES if floor_of(module) > floor_of("rewards.scoring.terms")] == []


def test_the_floor_check_finds_an_upward_import():
    assert upward_imports({"rewards.gate": {"watercolour.training.trainer"}, "flows.train": {"ground.records"}}) == [
        "rewards.gate (floor 2) -> watercolour.training.trainer (floor 9)"
    ]
    assert floor_of("rewards.judging.judge") == 3 and floor_of("openenv_painting.server.app") == 6


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_tasks_and_flows_hold_prefect_code_only():
    # Each module there imports Prefect (directly, or through a sibling of tasks/ for the flows' hooks).
    for folder in ("tasks", "flows"):
        for path in (ROOT / folder).glob("*.py"):
            if path.name != "__init__.py":
                text = path.read_text()
                assert "from prefect" in text or "import prefect" in text, f"{path.name} holds no Prefect code"


def test_no_folder_of_the_project_holds_more_than_a_dozen_modules():
    # A folder is a room a reader takes in at once; past a dozen modules it is two rooms.
    folders = {
        path.parent for package in (*PACKAGES, "bench", "scripts", "lab") for path in (ROOT / package).rglob("*.py")
    }
    crowded = {
        str(folder.relative_to(ROOT)): count
        for folder in folders
        if (count := len([path for path in folder.glob("*.py") if path.name != "__init__.py"])) > 12
    }
    assert crowded == {}


# tests/ mirrors the house: a folder per floor, or per feature that spans floors, named after what it tests.
TEST_ROOMS: dict[str, tuple[str, ...]] = {
    "ground": ("ground",),
    "renderers": ("renderers",),
    "rewards": ("rewards", "rewards.picture"),
    "judging": ("rewards.judging", "watercolour.judge_trust"),
    "scoring": ("rewards.scoring",),
    "repaint": ("episodes",),
    "openenv": ("openenv_painting",),
    "policy": ("watercolour.policy",),
    "pipeline": ("watercolour.pipeline",),
    "run_records": ("watercolour.run_records",),
    "operations": ("watercolour.operations",),
    "pool": ("watercolour.pool",),
    "training": ("watercolour.training",),
    "upstream": ("watercolour.upstream",),
    "cli": ("watercolour.commands", "watercolour.cli", "watercolour", "watercolour.rehearsal"),
    "orchestration": ("tasks", "flows", "deployments"),
    "bench": (),  # the benchmarks' own logic, outside the floors
    "house": (),  # the whole house: its floors, and the docs' recipes followed from a fresh clone
}


def test_the_tests_mirror_the_floors():
    tests = ROOT / "tests"
    assert sorted(path.name for path in tests.glob("test_*.py")) == [], "a test module belongs in a room's folder"
    rooms = {path.parent for path in tests.rglob("test_*.py")}
    assert {room.relative_to(tests).as_posix() for room in rooms} == set(TEST_ROOMS)
    # A package each, so two rooms may hold modules of the same name, and a reader takes each in at once.
    assert [room.name for room in rooms if not (room / "__init__.py").exists()] == []
    assert {room.name: n for room in rooms if (n := len(list(room.glob("*.py"))) - 1) > 12} == {}
    # Every floor of the house has a room of tests.
    covered = {folder for folders in TEST_ROOMS.values() for folder in folders}
    assert [folder for floor in FLOORS for folder in floor if folder not in covered] == []
