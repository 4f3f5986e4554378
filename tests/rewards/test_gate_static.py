"""The allowlist half of the static check: hostile sketches are refused with the code named next to each, and
every sketch this project writes or ships (seed pool, bench, procedural) still passes.

Each hostile fixture is the same small flower plus one hostile line, so the code that refuses it is the one
the line earns. Pure and fast: no browser.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import watercolour
from ground.prompt import JS_NAMESPACES, P5_CONSTANTS, P5_MATHS, P5_STATEMENTS, system_prompt
from ground.sketch import inventory
from rewards.gate import gate, static_check
from watercolour.policy import procedural


PACKAGE = Path(watercolour.__file__).parent
FIXTURES = PACKAGE / "fixtures" / "gate" / "static"
EXPECTED = {n: v for n, v in json.loads((FIXTURES / "expected.json").read_text()).items() if n != "_format"}
SHIPPED = sorted(
    [*(PACKAGE.parent / "ground" / "seed_pool").glob("*.js"), *(PACKAGE.parent / "bench" / "sketches").glob("*.js")]
)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")


def test_there_are_at_least_40_hostile_static_fixtures_each_with_its_verdict():
    assert len([n for n, v in EXPECTED.items() if not v["passed"]]) >= 40
    assert sorted(p.name for p in FIXTURES.iterdir() if p.name != "expected.json") == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_static_fixture_gets_its_expected_verdict(name):
    expected, verdict = EXPECTED[name], static_check(fixture(name))
    assert verdict.passed is expected["passed"], (name, verdict.details)
    assert set(expected["violations"]) <= set(verdict.violations), (name, verdict.details)
    assert all(verdict.details[code] for code in verdict.violations), "every code carries a detail"


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_sketches_pass_the_static_check(path):
    verdict = static_check(path.read_text())
    assert verdict.passed, verdict.details


def test_procedural_sketches_of_many_seeds_and_both_styles_pass_the_static_check():
    failures = {}
    for seed in range(120):
        style = "full" if seed % 2 else "compact"
        verdict = static_check(procedural.completion(seed, style=style))
        if not verdict.passed:
            failures[seed] = verdict.details
    assert not failures


@pytest.mark.parametrize(
    "name",
    [*P5_STATEMENTS, *P5_MATHS, *P5_CONSTANTS, "Array.from", "Math.*", "Number.isFinite", "let, const or function"],
)
def test_the_prompt_lists_every_name_the_check_permits(name):
    assert name in system_prompt()


def test_a_namespace_member_outside_its_list_is_named_in_the_detail():
    found = inventory("function setup() { Number.parseFloat('1'); Number.MAX_VALUE; }")
    assert found.unlisted_names == [f"Number.MAX_VALUE: the prompt permits only {', '.join(JS_NAMESPACES['Number'])}"]


@pytest.mark.parametrize(
    ("source", "field", "expected"),
    [
        ("function setup() { const t = translate(1, 2); }", "unlisted_names", ["translate: call it as a statement"]),
        ("async function setup() { await createCanvas(600, 600, WEBGL); }", "unlisted_names", []),
        ("function setup() { const r = random; }", "unlisted_names", ["random: call it"]),
        ("function setup() { width = 3; }", "global_writes", ["width: a global of p5 or JavaScript"]),
        ("setup = function () {}; window.draw = () => 0;", "global_writes", []),
        ("function setup() { let x; x = 1; x++; }", "global_writes", []),
        ("class A { m() { return this.x; } }", "unlisted_names", []),
        ("function setup() { const o = { a: [1] }; o.a[0]; o['a']; }", "computed_access", []),
        (
            "function setup() { const o = {}; o[`a${1}`]; }",
            "computed_access",
            ["o[`a${1}`]: a key built from strings"],
        ),
        ("function setup() { Math.max(1, 2)[0]; random([1, 2])[0]; [1][0]; }", "computed_access", []),
        ("function setup() { Math[k]; }", "computed_access", ["Math[k]: only the sketch's own"]),
        ("// safe --> arrow\nfunction setup() { const s = '<!-- x -->'; }", "ambiguous_source", []),
        ("function setup() {}\r\n", "ambiguous_source", []),
        ("function setup() { let ok = 1; ok && push(); push(), pop(); }", "unlisted_names", []),
        ("function setup() { [1].forEach((p) => brush.circle(p, p, 3, 0)); }", "unlisted_names", []),
        ("function d() { return brush.circle(1, 1, 1, 0); }", "unlisted_names", []),
        ("function setup() { const n = brush.circle(1, 1, 1, 0).length; }", "unlisted_names", ["brush.circle(1, 1"]),
    ],
)
def test_how_a_name_is_used_decides(source, field, expected):
    found = getattr(inventory(source), field)
    assert len(found) == len(expected) and all(f.startswith(e) for f, e in zip(found, expected, strict=True)), found


@pytest.mark.browser
async def test_the_permitted_vocabulary_sketch_passes_the_full_gate_in_chromium(browser_pool):
    # Every permitted kind of name exists in the vendored p5 and runs without an error: the prompt invites no
    # sketch that the renderer then refuses.
    verdict = await gate(fixture("permitted_vocabulary.js"), browser_pool)
    assert verdict.passed, verdict.details
