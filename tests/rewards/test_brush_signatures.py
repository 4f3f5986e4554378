"""Each brush method's signature, checked the two ways the gate checks it: statically in the source, and at render on
every call (renderers/boundary.py). A method takes the arguments the prompt lists, no more; a trailing argument may be
left out only where p5.brush defaults it inside the prompt's range (ground/prompt.py says which, and why)."""

from __future__ import annotations

from pathlib import Path

import pytest

import watercolour
from ground.prompt import ALLOWLIST, BRUSH_METHODS, brush_arguments_wanted
from ground.sketch import inventory
from renderers.boundary import boundary_script
from rewards.gate import gate


FIXTURES = Path(watercolour.__file__).parent / "fixtures" / "gate"

# Per method: the shortest legal call, the full call, one argument too many and a wrong kind (None where a method
# takes nothing, so no kind can be wrong), each as JavaScript argument lists.
CALLS: dict[str, tuple[str, str, str, str | None]] = {
    "scaleBrushes": ("3", "3", "3, 1", '"3"'),
    "noStroke": ("", "", "1", None),
    "fill": ('"#e98a6b"', '"#e98a6b", 200', '"#e98a6b", 200, 1', "200"),
    "noFill": ("", "", "1", None),
    "fillBleed": ("0.25", "0.25", '0.25, "out"', '"0.25"'),
    "fillTexture": ("", "0.4, 0.4", "0.4, 0.4, true", '"0.4"'),
    "beginShape": ("", "0.5", "0.5, 1", "true"),
    "vertex": ("100, 200", "100, 200", "100, 200, 1", '100, "200"'),
    "endShape": ("true", "true", "true, 1", '"close me"'),
    "circle": ("300, 300, 40", "300, 300, 40, 0.3", "300, 300, 40, 0.3, 1", '300, 300, "40"'),
}
# One argument fewer than the shortest legal call: every required argument is needed.
TOO_FEW = {name: ", ".join(short.split(", ")[:-1]) for name, (short, *_) in CALLS.items() if short}


def source(name: str, arguments: str) -> str:
    return f"function draw() {{ brush.{name}({arguments}); }}"


def test_every_method_has_its_four_calls_and_the_shortest_is_as_short_as_the_signature_allows():
    assert set(CALLS) == set(ALLOWLIST)
    for name, (short, full, *_) in CALLS.items():
        method = BRUSH_METHODS[name]
        assert len([a for a in short.split(", ") if a]) == method.required, name
        assert len([a for a in full.split(", ") if a]) == len(method.arguments), name


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_static_check_admits_the_shortest_and_the_full_call_and_refuses_the_rest(name):
    short, full, too_many, wrong_kind = CALLS[name]
    assert not inventory(source(name, short)).brush_arguments, (name, short)
    assert not inventory(source(name, full)).brush_arguments, (name, full)
    refused = [too_many] + ([wrong_kind] if wrong_kind else []) + ([TOO_FEW[name]] if name in TOO_FEW else [])
    for arguments in refused:
        found = inventory(source(name, arguments)).brush_arguments
        assert len(found) == 1 and found[0].endswith(brush_arguments_wanted(name)), (name, arguments, found)


def test_the_prompt_lists_the_optional_arguments_in_brackets_as_the_gate_admits_them():
    assert BRUSH_METHODS["circle"].signature("circle") == "circle(x, y, radius[, scribble])"
    assert BRUSH_METHODS["fill"].signature("fill") == "fill(colorHex[, opacity])"
    assert BRUSH_METHODS["fillTexture"].signature("fillTexture") == "fillTexture([amount[, borderIntensity]])"
    assert (
        brush_arguments_wanted("fill")
        == "brush.fill(colorHex[, opacity]) takes a string, then optionally a finite number"
    )


@pytest.mark.browser
async def test_the_render_s_wall_admits_and_refuses_the_same_calls_in_chromium():
    """The boundary's own check of every call, run in Chromium on values the static check cannot see (a computed
    argument list reaches it unread)."""
    cases = []
    for name, (short, full, too_many, wrong_kind) in CALLS.items():
        cases += [[name, short, True], [name, full, True], [name, too_many, False]]
        cases += [[name, wrong_kind, False]] if wrong_kind else []
        cases += [[name, TOO_FEW[name], False]] if name in TOO_FEW else []
    script = f"""(cases) => {{
      const refused = [];
      const wall = ({boundary_script()})((code, detail) => refused.push(code + ": " + detail));
      return cases.map(([name, args]) => {{
        const before = refused.length;
        const CLOSE = "close";
        const passed = wall.brushArguments(name, new Function("CLOSE", "return [" + args + "]")(CLOSE));
        return [passed !== null, refused.slice(before)];
      }});
    }}"""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = await browser.new_page()
        answers = await page.evaluate(script, cases)
        await browser.close()
    for (name, args, admitted), (passed, refusals) in zip(cases, answers, strict=True):
        assert passed is admitted, (name, args, refusals)
        assert not refusals if admitted else refusals[0].startswith(f"brush_arguments: brush.{name}("), refusals


@pytest.mark.browser
async def test_the_short_forms_flower_passes_the_gate_and_paints(browser_pool):
    verdict = await gate((FIXTURES / "short_forms_flower.js").read_text(), browser_pool)
    assert verdict.passed, verdict.details
    assert verdict.render is not None and verdict.render.coverage > 0.2
