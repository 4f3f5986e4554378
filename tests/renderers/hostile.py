"""Shared by the hostile-sketch suites (tests/renderers/test_sandbox.py, tests/renderers/test_boundary.py): the honest painting their
attacks are wrapped around, and each fixture's expected verdict, named on its first line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ground.records import GateVerdict, RenderResult, RewardParts


# The painting every `honest` fixture makes around its attack.
HONEST = """function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke(); brush.fill("#b0305a", 220); brush.circle(300, 300, 140, 0.3);
}
"""


def expectation(path: Path) -> tuple[str, set[str]]:
    """('pass' | 'honest' | 'all' | 'any_of', codes) from the fixture's first line, `// expect: ...`."""
    words = path.read_text().splitlines()[0].removeprefix("// expect:").split()
    if words in (["pass"], ["honest"]):
        return words[0], set()
    if words[0] == "any_of":
        return "any_of", set(words[1:])
    return "all", set(words)


def meets(path: Path, found: set[str], png: bytes | None, honest: bytes | None) -> bool:
    """Whether the violation codes `found` (and the picture) are what the fixture at `path` expects.

    `honest`: it passes and its picture is byte for byte the honest painting, so the attack changed nothing.
    """
    kind, codes = expectation(path)
    if kind == "honest":
        return not found and png is not None and png == honest
    return {"pass": not found, "all": bool(codes) and codes <= found, "any_of": bool(codes & found)}[kind]


def reward_parts_json(render: RenderResult, details: dict[str, list[str]]) -> str:
    """The rollout store's record of a render judged as `details`: what must always serialise."""
    verdict = GateVerdict(passed=not details, violations=list(details), details=details, render=render)
    return RewardParts(reward=None if not details else 0.0, verdict=verdict).model_dump_json(
        exclude={"verdict": {"render": {"png"}}}
    )


def frames_of(pool: Any) -> list:
    """Every frame of every page of a started pool, as Playwright knows them: for running a page's own code in one."""
    return [
        frame
        for browser in pool._browsers
        for context in browser.contexts
        for page in context.pages
        for frame in page.frames
    ]
