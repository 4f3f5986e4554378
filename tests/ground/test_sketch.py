"""Extraction and the static inventory: pure and fast, no browser."""

from __future__ import annotations

import pytest

from ground.sketch import candidate_source, extract_sketch, inventory


def wrap(body: str) -> str:
    """A valid skeleton with `body` inside draw."""
    return (
        "async function setup() {\n  createCanvas(600, 600, WEBGL);\n  brush.scaleBrushes(3);\n  noLoop();\n}\n"
        "function draw() {\n  translate(-width / 2, -height / 2);\n" + body + "\n}\n"
    )


NOT_OWN = ": only the sketch's own arrays and objects may be indexed"
SKETCH = wrap("brush.fill('#f28c6a', 200);\nbrush.circle(300, 300, 80, 0.3);")


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("Here you go:\n```js\n" + SKETCH + "```\nEnjoy.", SKETCH.strip()),
        ("```javascript\n" + SKETCH + "```", SKETCH.strip()),
        ("```JavaScript\n" + SKETCH + "```", SKETCH.strip()),
        ("```\n" + SKETCH + "```", SKETCH.strip()),
        (SKETCH, SKETCH.strip()),
        ("```python\nprint(1)\n```\nand the sketch:\n```js\n" + SKETCH + "```", SKETCH.strip()),
        ("I cannot draw pictures, sorry.", None),
        ("", None),
        ("function drawing() {}\nlet setupDone = true;", None),
        ("// function setup() {}\nconst s = 'function draw() {}';", None),
        ("window.setup = () => createCanvas(600, 600, WEBGL);", "window.setup = () => createCanvas(600, 600, WEBGL);"),
    ],
    ids=[
        "fence-js",
        "fence-javascript",
        "fence-case",
        "fence-bare",
        "no-fence",
        "skips-python-fence",
        "refusal",
        "empty",
        "longer-names",
        "commented-and-string",
        "assignment",
    ],
)
def test_extract_sketch(completion, expected):
    assert extract_sketch(completion) == expected


def test_cut_off_fence_yields_the_text_after_it_and_reads_as_truncated():
    completion = "Sure!\n```js\n" + SKETCH[:120]
    assert candidate_source(completion) == SKETCH[:120].strip()
    assert "```" not in candidate_source(completion)
    assert inventory(candidate_source(completion)).truncated


CASES = [
    # (id, source, field, expected value or member)
    ("flower-clean", SKETCH, "bare_primitives", []),
    ("webgl", SKETCH, "webgl", True),
    ("webgl-string", SKETCH.replace("WEBGL", '"webgl"'), "webgl", True),
    ("not-webgl", SKETCH.replace(", WEBGL", ""), "webgl", False),
    ("second-canvas-2d", wrap("createCanvas(600, 600);"), "webgl", False),
    (
        "counts",
        wrap("brush.beginShape(0.5); brush.vertex(1, 2); brush.vertex(3, 4); brush.endShape(true);"),
        "brush_calls",
        {"scaleBrushes": 1, "beginShape": 1, "vertex": 2, "endShape": 1},
    ),
    ("outside-allowlist", wrap('brush.set("marker"); brush.line(1, 2, 3, 4);'), "outside_allowlist", ["line", "set"]),
    ("uncalled-member", wrap("const l = brush.line;"), "outside_allowlist", ["line"]),
    ("bare-ellipse", wrap("ellipse(300, 300, 40, 40);"), "bare_primitives", ["ellipse"]),
    ("window-rect", wrap("window.rect(1, 2, 3, 4);"), "bare_primitives", ["window.rect"]),
    ("brush-circle-not-bare", wrap("brush.circle(1, 2, 3, 0);"), "bare_primitives", []),
    (
        "own-helper-not-bare",
        "let circle = (x) => brush.circle(x, x, 9, 0);\n" + wrap("circle(300);"),
        "bare_primitives",
        [],
    ),
    (
        "helper-in-other-scope",
        wrap("function f() { const ellipse = 1; }\nellipse(1, 2, 3, 4);"),
        "bare_primitives",
        ["ellipse"],
    ),
    (
        "switch-block-scope",
        wrap("switch (1) { case 0: let ellipse = 1; }\nellipse(1, 2, 3, 4);"),
        "bare_primitives",
        ["ellipse"],
    ),
    (
        "generator-parameter",
        "function* g(ellipse) { ellipse(1, 2, 3, 4); }\n" + SKETCH,
        "bare_primitives",
        [],
    ),
    (
        "default-value-is-not-a-binding",
        wrap("const f = (a = ellipse) => ellipse(1, 2, 3, 4);"),
        "bare_primitives",
        ["ellipse"],
    ),
    ("instance-mode", wrap("new p5((p) => p.ellipse(1, 2, 3, 4));"), "bare_primitives", ["new p5"]),
    ("raw-context", wrap("drawingContext.clear(0);"), "bare_primitives", ["drawingContext"]),
    ("text", wrap('text("hibiscus", 10, 20);'), "text_drawing", ["text"]),
    ("text-size-alone", wrap("textSize(20); textAlign(CENTER);"), "text_drawing", []),
    ("text-to-points", wrap('font.textToPoints("a", 0, 0);'), "text_drawing", ["font.textToPoints"]),
    ("fetch", wrap('fetch("http://x");'), "external_access", ["fetch"]),
    ("load-image", wrap('loadImage("a.png");'), "external_access", ["loadImage"]),
    ("new-image", wrap("const i = new Image();"), "external_access", ["Image"]),
    ("xhr", wrap("new XMLHttpRequest();"), "external_access", ["XMLHttpRequest"]),
    ("websocket", wrap('new WebSocket("ws://x");'), "external_access", ["WebSocket"]),
    ("import-call", wrap('import("http://x/m.js");'), "external_access", ["import()"]),
    ("worker", wrap('new SharedWorker("w.js");'), "external_access", ["SharedWorker"]),
    ("eval", wrap('eval("1");'), "external_access", ["eval"]),
    ("unicode-escaped-eval", wrap('\\u0065val("1"); f\\u{65}tch(1);'), "external_access", ["eval", "fetch"]),
    ("unicode-escaped-method", wrap("brush.l\\u0069ne(1, 2, 3, 4);"), "outside_allowlist", ["line"]),
    (
        "escape-with-leading-zeros",  # V8 reads \u{0000000065} as e: any number of zeros may lead
        wrap('\\u{0000000065}val("1"); const s = "\\u{000000063}onstructor";'),
        "external_access",
        ["a string naming constructor", "eval"],
    ),
    ("function-ctor", wrap('Function("return 1")();'), "external_access", ["Function"]),
    ("constructor-chain", wrap('(() => 0).constructor("return 1")();'), "external_access", ["(() => 0).constructor"]),
    ("timer-string", wrap('setTimeout("go()", 1);'), "external_access", ["setTimeout with a string of code"]),
    ("timer-function", wrap("setTimeout(() => 1, 1);"), "external_access", []),
    (
        "document",
        wrap('document.body.innerHTML = "<b>x</b>";'),
        "external_access",
        ["document", "document.body.innerHTML"],
    ),
    ("beacon", wrap('navigator.sendBeacon("http://x");'), "external_access", ["navigator", "navigator.sendBeacon"]),
    ("location", wrap('location = "http://x";'), "external_access", ["location ="]),
    ("window-open", wrap('window.open("http://x");'), "external_access", ["window.open"]),
    ("shorthand-escape", wrap("const o = { fetch };"), "external_access", ["fetch"]),
    ("own-location-variable", wrap("let location = 3; location = 4;"), "external_access", []),
    ("computed-brush", wrap('brush["li" + "ne"](1, 2, 3, 4);'), "computed_access", ['brush["li" + "ne"]' + NOT_OWN]),
    (
        "computed-window",
        wrap('window["fe" + "tch"]("http://x");'),
        "computed_access",
        ['window["fe" + "tch"]' + NOT_OWN],
    ),
    ("computed-this", wrap('this["ellipse"](1, 2, 3, 4);'), "computed_access", ['this["ellipse"]' + NOT_OWN]),
    ("alias-window", wrap("const w = window;"), "computed_access", ["window used as a value"]),
    ("reflect", wrap("Reflect.get(globalThis, name);"), "computed_access", ["globalThis used as a value"]),
    ("destructure-brush", wrap("const { line } = brush;"), "computed_access", ["brush used as a value"]),
    ("window-brush", wrap("window.brush.line(1, 2, 3, 4);"), "computed_access", ["window.brush"]),
    ("with", wrap("with (brush) { line(1, 2, 3, 4); }"), "computed_access", ["brush used as a value", "with (...)"]),
    (
        "colour-table-index",
        wrap('const c = ["#fff", "#000"][i % 2]; const palette = {}; palette[c];'),
        "computed_access",
        [],
    ),
    (
        "names-in-comments-strings",
        wrap(
            '// ellipse(1,2,3,4) fetch(x)\nconst s = "eval fetch text(";\n'
            "let retrieval = 1; const fetchColour = 2; let textual = 3;"
        ),
        "external_access",
        [],
    ),
    ("syntax-error", wrap("brush.circle(1, 2, 3));\nlet x = 1;"), "syntax_error_lines", [8]),
    ("truncated-block", SKETCH[: SKETCH.index("brush.circle")], "truncated", True),
    ("truncated-string", SKETCH + 'const s = "unfinished', "truncated", True),
    ("complete", SKETCH, "truncated", False),
    ("setup-visible", SKETCH, "defines_setup", True),
    ("const-setup-invisible", "const setup = () => createCanvas(600, 600, WEBGL);", "defines_setup", False),
    ("var-setup-visible", "var setup = function () {};", "defines_setup", True),
    ("commented-setup", "// function setup() {}\nfunction draw() {}", "defines_setup", False),
]


@pytest.mark.parametrize(("source", "field", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_inventory(source, field, expected):
    value = getattr(inventory(source), field)
    assert (dict(value) if field == "brush_calls" else value) == expected


def test_outside_allowlist_follows_the_allowlist_given():
    source = wrap("brush.line(1, 2, 3, 4);")
    assert inventory(source, allowlist=("line", "scaleBrushes")).outside_allowlist == []


def test_counts_are_call_sites_of_the_painting_methods():
    source = wrap(
        "brush.fill('#fff', 200); brush.beginShape(0); brush.vertex(1, 1); brush.vertex(2, 2);"
        "brush.vertex(3, 1); brush.endShape(true); brush.circle(5, 5, 5, 0);"
    )
    assert inventory(source).counts() == {"shapes": 1, "vertices": 3, "circles": 1, "fills": 1}


def test_deeply_nested_source_does_not_exhaust_python_recursion():
    found = inventory("function draw() { let x = " + "(" * 5000 + "1" + ")" * 5000 + "; }")
    assert found.defines_draw
