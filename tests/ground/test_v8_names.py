"""A differential test of the static check's scope analysis against V8's own name resolution.

Every sketch the checker passes is run in Node (V8) with p5 and p5.brush replaced by inert stand-ins and a
global object that records every name looked up on it, through loading, `setup` and `draw`. Each name V8
resolved to a global must be one the prompt permits or a top-level name of the sketch's own: a name the
checker took for the sketch's own binding while V8 found the global (a `let ellipse` inside a `switch`, before
this test existed) shows up here as p5's `ellipse` being looked up.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from tree_sitter import Parser

import watercolour
from ground.js_scope import declarations
from ground.prompt import JS_CONSTANTS, JS_FUNCTIONS, JS_NAMESPACES, P5_CONSTANTS, P5_MATHS, P5_STATEMENTS
from ground.sketch import candidate_source, inventory, language
from rewards.gate import static_check
from watercolour.policy import procedural


NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="needs Node (V8) on PATH: run `make setup`")

PACKAGE = Path(watercolour.__file__).parent
GATE = PACKAGE / "fixtures" / "gate"
JS_BUILTINS = [*JS_FUNCTIONS, *JS_CONSTANTS, *JS_NAMESPACES, "undefined"]
PERMITTED = {*P5_STATEMENTS, *P5_MATHS, *P5_CONSTANTS, *JS_BUILTINS, "brush", "setup", "draw"}

# Loads the sketch as a classic script in a fresh context whose global object records every lookup, then runs
# setup and draw. p5's calls do nothing, its maths returns 0.5 (or a list's first element), brush's methods
# do nothing; the JavaScript built-ins are the real ones.
RECORD_LOOKUPS = """
const vm = require("vm");
process.on("unhandledRejection", () => {});  // a sketch's floating promise failing is the sketch's business
const { sources, statements, maths, constants, builtins } = JSON.parse(require("fs").readFileSync(0, "utf8"));
async function lookups(source) {
  const seen = new Set();
  const stage = { brush: new Proxy({}, { get: () => () => undefined }), stage_error: {} };
  for (const name of statements) stage[name] = () => undefined;
  for (const name of maths) stage[name] = (...args) => (Array.isArray(args[0]) ? args[0][0] : 0.5);
  for (const name of constants) stage[name] = name === "width" || name === "height" ? 600 : 1;
  for (const name of builtins) stage[name] = globalThis[name];
  const recorder = (trap) => (target, key) => {
    if (typeof key === "string") seen.add(key);
    return trap(target, key);
  };
  const global = new Proxy(stage, { has: recorder((t, k) => k in t), get: recorder((t, k) => t[k]) });
  const context = vm.createContext(global, { microtaskMode: "afterEvaluate" });  // the timeout covers draw too
  let error = null;
  try {
    new vm.Script(source).runInContext(context, { timeout: 5000 });
    // The context drains its own microtasks before returning, so an async setup and draw finish in here.
    const run = `(async () => {
      if (typeof setup === "function") await setup();
      if (typeof draw === "function") await draw();
    })().catch((caught) => { stage_error.caught = caught; });`;
    vm.runInContext(run, context, { timeout: 5000 });
    if ("caught" in stage.stage_error) error = String(stage.stage_error.caught);
  } catch (caught) {
    error = String(caught);
  }
  seen.delete("stage_error");
  return { error, seen: [...seen] };
}
(async () => {
  const out = [];
  for (const source of sources) out.push(await lookups(source));
  console.log(JSON.stringify(out));
})();
"""


def global_lookups(sources: list[str]) -> list[dict]:
    """For each source: the names V8 looked up on the global object, and the error that stopped it, if any."""
    assert NODE is not None
    batch = dict(
        sources=sources, statements=P5_STATEMENTS, maths=P5_MATHS, constants=P5_CONSTANTS, builtins=JS_BUILTINS
    )
    done = subprocess.run(
        [NODE, "-e", RECORD_LOOKUPS], input=json.dumps(batch), capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def own_top_level_names(source: str) -> set[str]:
    """The names the sketch declares at its top level: V8 keeps its functions and vars on the global object."""
    root = Parser(language()).parse(source.encode()).root_node
    return declarations(root).get(root.id, set())


def passing_sketches() -> dict[str, str]:
    """Shipped sketches and the gate fixtures expected to pass (the others include endless loops and a memory
    bomb, which the renderer's deadline and heap cap are for)."""
    good = [
        folder / name
        for folder in (GATE, GATE / "static")
        for name, expected in json.loads((folder / "expected.json").read_text()).items()
        if name != "_format" and expected["passed"]
    ]
    files = [
        *(PACKAGE.parent / "ground" / "seed_pool").glob("*.js"),
        *(PACKAGE.parent / "bench" / "sketches").glob("*.js"),
        *good,
    ]
    sources = {p.name: candidate_source(p.read_text()) for p in sorted(files)}
    sources |= {f"procedural/{seed}": candidate_source(procedural.completion(seed)) for seed in range(10)}
    return {name: source for name, source in sources.items() if static_check(source).passed}


def test_v8_finds_only_permitted_globals_in_every_sketch_the_checker_passes():
    sketches = passing_sketches()
    results = global_lookups(list(sketches.values()))
    strays = {
        name: sorted(set(result["seen"]) - PERMITTED - own_top_level_names(source))
        for (name, source), result in zip(sketches.items(), results, strict=True)
    }
    assert len(sketches) > 40
    assert not {name: names for name, names in strays.items() if names}
    assert results[list(sketches).index("permitted_vocabulary.js")]["error"] is None, "the stand-ins run it through"


def test_the_probe_sees_a_global_the_checker_once_took_for_a_local():
    # The switch fixture is refused now; the probe shows why: V8 looks up p5's ellipse.
    source = (GATE / "static" / "switch_scope_shadow.js").read_text()
    assert "bare_primitives" in static_check(source).violations
    assert "ellipse" in global_lookups([source])[0]["seen"]


# Scopes a declaration or a call can sit in; any nesting of them must resolve `ellipse` as V8 does.
WRAPS = [
    ("{ ", " }"),
    ("switch (1) { case 1: ", " }"),
    ("for (let q = 0; q < 1; q++) { ", " }"),
    ("for (const q of [1]) { ", " }"),
    ("(() => { ", " })();"),
    ("(function () { ", " })();"),
    ("try { ", " } catch (e) { }"),
    ("try { null.x; } catch (e) { ", " }"),
    ("if (1) { ", " }"),
    ("lab: { ", " }"),
    ("class K { static { ", " } }"),
    ("class K { m() { ", " } }; new K().m();"),
    ("do { ", " } while (0);"),
    ("(async () => { ", " })();"),
]
DECLARATIONS = [
    "let ellipse = (x) => x;",
    "const ellipse = (x) => x;",
    "var ellipse = (x) => x;",
    "function ellipse(x) { return x; }",
    "let { ellipse } = { ellipse: (x) => x };",
    "let [ellipse] = [(x) => x];",
]


def test_random_scope_nestings_resolve_ellipse_as_v8_does():
    rng = random.Random(11)

    def nest(body: str) -> str:
        for _ in range(rng.randint(0, 2)):
            opening, closing = rng.choice(WRAPS)
            body = opening + body + closing
        return body

    cases = []
    for _ in range(300):
        parts = [nest(rng.choice(DECLARATIONS)), nest("ellipse(1, 2, 3, 4);")]
        cases.append("function draw() { " + nest(" ".join(parts if rng.random() < 0.5 else parts[::-1])) + " }")
    results = global_lookups(cases)
    looked_up = [case for case, result in zip(cases, results, strict=True) if "ellipse" in result["seen"]]
    missed = [case for case in looked_up if "ellipse" not in inventory(case).bare_primitives]
    assert len(looked_up) > 50 and not missed
