"""What a sketch can reach: a SES Compartment whose globals are only the names the prompt permits.

The frame is locked down with Agoric's `ses` (`lockdown()`): every JavaScript intrinsic (Object, Array, Function,
their prototypes) is frozen, and the constructors reachable from any value (`(() => {}).constructor`) no longer
compile code in the page's scope. The sketch is then evaluated in a `Compartment`: strict code whose global scope
holds the ten brush methods, the p5 statements, maths and constants, and the JavaScript helpers the prompt lists
(`ground.prompt`), each a hardened stand-in made here, and nothing else: no window, document, canvas, p5
instance, timer, console or host constructor exists in its scope, whatever `this`, key, prototype or returned
value it uses. The static check stays as the first, friendly refusal; this is the wall.

Each stand-in hands p5 and p5.brush only data the harness copied out of the sketch's arguments
(renderers/boundary.py), so no code of the sketch runs inside p5 or p5.brush, and hands back only primitives (or
an element of the sketch's own list, for `random(list)`): a brush call returns nothing, a p5 statement nothing. A
brush method takes the arguments the prompt lists. `createCanvas` paints only at the prompt's 600 x 600
WEBGL; anything else is refused, and so is a flood of brush calls. When the harness takes the picture every
stand-in goes dead, so nothing the sketch runs afterwards (a detached promise) reaches the canvas.
"""

from __future__ import annotations

import json

from ground.prompt import (
    ALLOWLIST,
    CANVAS_SIZE,
    JS_CONSTANTS,
    JS_FUNCTIONS,
    JS_NAMESPACES,
    P5_CONSTANTS,
    P5_MATHS,
    P5_STATEMENTS,
)
from renderers import boundary


# The most brush calls one render may make. The seed pool's sketches make at most ~900 and the procedural ones
# fewer; a call costs microseconds, a painted shape ~35 ms, so past this a sketch is flooding, not painting.
MAX_BRUSH_CALLS = 20_000
# p5 maths that take a list: random(list) returns one of its elements, max(list) and min(list) a number.
LIST_MATHS = ("random", "max", "min")

# lockdown's options. Errors keep their stacks (the verdict quotes them) and the page's console stays the
# browser's own; SES installs no error or rejection handler of its own, since an uncaught error must reach the
# DevTools protocol as it did before (renderers/watch.py), and reports nothing to the console.
LOCKDOWN_OPTIONS = {
    "errorTaming": "unsafe",
    "consoleTaming": "unsafe",
    "errorTrapping": "none",
    "unhandledRejectionTrapping": "none",
    "reporting": "none",
    "overrideTaming": "moderate",
}


# SES refuses, by a text search, any source containing `eval(`, `import(` or an HTML-like comment, in comments and
# strings too: the seed pool's comment-heavy fixture failed on `eval("x")` in a comment. The static check refuses
# all three as code. SES documents its direct-eval search as a compatibility guard, not a security one (the
# compartment's eval is its own), and its two evasions rewrite the text instead (`import(` to `__import__(`, `<!--`
# to `< ! --`), after which its import and comment checks still run.
EVALUATE_OPTIONS = {
    "__rejectSomeDirectEvalExpressions__": False,
    "__evadeImportExpressionTest__": True,
    "__evadeHtmlCommentTest__": True,
}


# The confinement as a script; `confine_script` fills in the @@NAMES@@.
CONFINE_JS = """(refuse) => {
  const names = @@NAMES@@;
  const apply = Reflect.apply, defineProperty = Reflect.defineProperty, ownKeys = Reflect.ownKeys;
  const deleteProperty = Reflect.deleteProperty, isArray = Array.isArray, includes = Array.prototype.includes;
  const page = window, painter = window.brush, SIZE = @@CANVAS_SIZE@@, MAX_CALLS = @@MAX_BRUSH_CALLS@@;
  const { datum, element, describe, brushArguments, guarded } = (@@BOUNDARY@@)(refuse);
  lockdown(@@LOCKDOWN_OPTIONS@@);
  let live = true, calls = 0;
  const plain = (value) => value === null || (typeof value !== "object" && typeof value !== "function");
  const pageFunction = (name) => {
    const found = page[name];
    if (typeof found !== "function") throw new ReferenceError(name + " is available only once setup runs");
    return found;
  };
  const call = (name, args, lists) => {
    const passed = [];
    for (let i = 0; i < args.length; i++) passed[i] = datum(name, args[i], lists);
    return guarded(name, pageFunction(name), undefined, passed);
  };
  const statement = (name) => (...args) => {
    if (live) call(name, args, true);
    return undefined;
  };
  // random(list) is p5's own draw, random(), turned into an index the way p5 does (floor(r * length)): the same
  // random stream and the same choice, read out of the sketch's list as data and handed back to the sketch.
  const maths = (name) => (...args) => {
    if (name === "random" && args.length === 1 && isArray(args[0])) {
      return element(name, args[0], guarded(name, pageFunction(name), undefined, []));
    }
    const out = call(name, args, apply(includes, names.lists, [name]));
    if (plain(out)) return out;
    throw new TypeError(name + "() returned something that is not a number");
  };
  const brushMethod = (name) => (...args) => {
    if (!live) return undefined;
    calls += 1;
    if (calls > MAX_CALLS) {
      live = false;
      refuse("flood", "more than " + MAX_CALLS + " brush calls");
      return undefined;
    }
    const passed = brushArguments(name, args);
    if (passed) guarded("brush." + name, painter[name], painter, passed);
    return undefined;
  };
  const createCanvas = (...args) => {
    if (!live) return undefined;
    const [w, h, mode] = args;
    const asked = "createCanvas(" + describe(w) + ", " + describe(h);
    if (mode !== page.WEBGL) {
      refuse("not_webgl", asked + ", " + describe(mode) + "): call createCanvas(600, 600, WEBGL)");
    } else if (w !== SIZE || h !== SIZE) {
      refuse("canvas_size", asked + ", WEBGL): the canvas is " + SIZE + " x " + SIZE);
    } else {
      guarded("createCanvas", pageFunction("createCanvas"), undefined, [SIZE, SIZE, mode]);
    }
    return undefined;
  };
  const brush = {};
  for (const name of names.brush) brush[name] = brushMethod(name);
  const globals = { brush: harden(brush), Math };
  for (const name of names.statements) globals[name] = name === "createCanvas" ? createCanvas : statement(name);
  for (const name of names.maths) globals[name] = maths(name);
  harden(globals);
  const compartment = new Compartment({ globals, __options__: true });
  const scope = compartment.globalThis;
  const keep = new Set([...ownKeys(globals), ...names.js, "undefined"]);
  for (const key of ownKeys(scope)) if (!keep.has(key)) deleteProperty(scope, key);
  // width, height and p5's constants are read when used: p5 sets them once it starts, as it does for a sketch.
  for (const name of names.constants) {
    defineProperty(scope, name, { get() {
      const value = page[name];
      if (value === undefined) throw new ReferenceError(name + " is available only once setup runs");
      return value;
    } });
  }
  const EVALUATE_OPTIONS = @@EVALUATE_OPTIONS@@;
  // p5 awaits setup and draw: it gets the harness's own promise, settled with nothing once the sketch's result
  // has, so p5 never reads a value the sketch returned (a thenable's `then` would run on p5's stack).
  const entry = (fn) => async function () { await apply(fn, undefined, []); };
  return {
    run(source) {
      const found = compartment.evaluate(
        source + "\\n;[typeof setup === 'function' ? setup : undefined, typeof draw === 'function' ? draw : undefined];"
          + "\\n//# sourceURL=sketch.js",
        EVALUATE_OPTIONS,
      );
      const setup = found && found[0], draw = found && found[1];
      if (typeof setup === "function") page.setup = entry(setup);
      if (typeof draw === "function") page.draw = entry(draw);
    },
    revoke() { live = false; },
  };
}"""


def confine_script() -> str:
    """JavaScript: `confine(refuse)`, run once in the frame before the sketch, returns `{ run(source), revoke() }`.

    `refuse(code, detail)` is the probe's: it ends the render with that refusal. `run` evaluates the sketch in
    its compartment and installs its setup and draw for p5's global mode; `revoke` kills every stand-in.
    """
    names = {
        "brush": list(ALLOWLIST),
        "statements": list(P5_STATEMENTS),
        "maths": list(P5_MATHS),
        "constants": list(P5_CONSTANTS),
        "js": list(JS_FUNCTIONS + JS_CONSTANTS + tuple(JS_NAMESPACES)),
        "lists": list(LIST_MATHS),
    }
    return boundary.fill(
        CONFINE_JS,
        {
            "NAMES": json.dumps(names),
            "CANVAS_SIZE": CANVAS_SIZE,
            "MAX_BRUSH_CALLS": MAX_BRUSH_CALLS,
            "BOUNDARY": boundary.boundary_script(),
            "LOCKDOWN_OPTIONS": json.dumps(LOCKDOWN_OPTIONS),
            "EVALUATE_OPTIONS": json.dumps(EVALUATE_OPTIONS),
        },
    )
