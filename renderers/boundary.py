"""What crosses from the sketch into p5 and p5.brush: data the harness copied, never a value of the sketch's making.

A stand-in (renderers/capabilities.py) hands p5 and p5.brush only values built here: a number, string or boolean as
is, and a list as a fresh array filled from the sketch's list by reading its own data properties, with intrinsics
taken before the sketch runs. Nothing here calls a method of the sketch's value: no species constructor, iterator,
`valueOf`, `toString`, getter or `map`, so p5 never runs sketch code from its own stack and never holds an object it
could treat as an image, a colour or a vector. The earlier copy (`Array.prototype.slice`) honoured `Symbol.species`
and trusted the copy's own `length`: a sketch subclassing Array chose what p5 received, and p5 later called the
sketch's own methods during colour mapping, matrix maths and fills, past every check.

The brush methods take the arguments the prompt lists (`ground.prompt.BRUSH_METHODS`: no more, none it requires left
out, each of its kind); any other call ends the render as `brush_arguments`. An error p5 or p5.brush throws reaches the sketch as a new TypeError of the frozen
intrinsics carrying the error's text, never the thrown object: a `DOMException` from p5's `structuredClone` once
gave the sketch a host prototype it could write to.
"""

from __future__ import annotations

import json
import re

from ground.prompt import BRUSH_ARGUMENTS, BRUSH_REQUIRED, brush_arguments_wanted


# The longest list a stand-in copies. A palette for random(list) or a max() over a row of numbers holds tens; a
# copy reads one descriptor an item, so a list claiming a billion items would spin until the deadline.
MAX_LIST = 10_000
# p5's CLOSE constant (p5 2.3.4's constants module), which endShape takes besides a boolean.
P5_CLOSE = "close"
# How much of a string argument a refusal quotes: enough to recognise it, too little to carry a page of text.
QUOTED_CHARS = 24


# The boundary as a script; `boundary_script` fills in the @@NAMES@@.
BOUNDARY_JS = """(refuse) => {
  const apply = Reflect.apply, descriptor = Reflect.getOwnPropertyDescriptor, isArray = Array.isArray;
  const finite = Number.isFinite, floor = Math.floor, stringify = JSON.stringify, text = String;
  const sliceText = String.prototype.slice, hasOwn = Object.prototype.hasOwnProperty;
  const signatures = @@SIGNATURES@@;
  const MAX_LIST = @@MAX_LIST@@;
  const primitive = (value) => {
    const kind = typeof value;
    return kind === "number" || kind === "string" || kind === "boolean" || value === undefined || value === null;
  };
  // An own data property's value, or undefined when there is none; an accessor is refused, never run.
  const own = (name, value, key) => {
    const found = descriptor(value, key);
    if (found === undefined) return undefined;
    if (!apply(hasOwn, found, ["value"])) throw new TypeError(name + "() takes lists of plain values, not getters");
    return found.value;
  };
  const size = (name, list) => {
    const length = own(name, list, "length");
    if (typeof length !== "number" || !(length >= 0 && length <= MAX_LIST) || floor(length) !== length) {
      throw new TypeError(name + "() takes lists of at most " + MAX_LIST + " items");
    }
    return length;
  };
  const copy = (name, list) => {
    const length = size(name, list), out = [];
    for (let i = 0; i < length; i++) {
      const item = own(name, list, text(i));
      if (!primitive(item)) throw new TypeError(name + "() takes lists of numbers or strings");
      out[i] = item;
    }
    return out;
  };
  const datum = (name, value, lists) => {
    if (primitive(value)) return value;
    if (lists && isArray(value)) return copy(name, value);
    throw new TypeError(name + "() takes numbers or strings" + (lists ? " or lists of them" : ""));
  };
  const element = (name, list, index) => {
    const length = size(name, list);
    return length === 0 ? undefined : own(name, list, text(floor(index * length)));
  };
  const describe = (value) => {
    const kind = typeof value;
    if (kind === "string") {
      const shown = apply(sliceText, value, [0, @@QUOTED_CHARS@@]);
      return stringify(shown) + (shown.length < value.length ? "..." : "");
    }
    if (primitive(value)) return text(value);
    return isArray(value) ? "a list" : kind === "object" ? "an object" : "a " + kind;
  };
  const fits = (kind, value) => {
    if (kind === "number") return typeof value === "number" && finite(value);
    if (kind === "close") return typeof value === "boolean" || value === @@P5_CLOSE@@;
    return typeof value === kind;
  };
  const brushArguments = (name, args) => {
    const [kinds, required, wanted] = signatures[name];
    let fine = args.length >= required && args.length <= kinds.length;
    for (let i = 0; fine && i < args.length; i++) fine = fits(kinds[i], args[i]);
    if (fine) return args;
    const shown = [];
    for (let i = 0; i < args.length && i < 6; i++) shown[i] = describe(args[i]);
    refuse("brush_arguments", "brush." + name + "(" + shown.join(", ") + (args.length > 6 ? ", ..." : "") + "): " + wanted);
    return null;
  };
  const guarded = (name, fn, self, args) => {
    try {
      return apply(fn, self, args);
    } catch (error) {
      let said = typeof error;
      try { said = text(error && error.message); } catch (e) {}
      throw new TypeError(name + "() failed in p5: " + apply(sliceText, said, [0, 200]));
    }
  };
  return { datum, element, describe, brushArguments, guarded };
}"""


def boundary_script() -> str:
    """JavaScript: `boundary(refuse)`, run once before `lockdown()`, returns the copier and the checked calls.

    `datum(name, value, lists)` copies one argument (a primitive, or with `lists` a list of primitives);
    `element(name, list, index)` reads one item of the sketch's list as data; `brushArguments(name, args)` returns
    the checked arguments of a brush method, or null after refusing the render; `guarded(name, fn, self, args)` calls
    into p5 and rethrows any error as a plain TypeError; `describe(value)` names a value for a refusal's detail.
    """
    signatures = {
        name: [list(kinds), BRUSH_REQUIRED[name], brush_arguments_wanted(name)]
        for name, kinds in BRUSH_ARGUMENTS.items()
    }
    return fill(
        BOUNDARY_JS,
        {
            "SIGNATURES": json.dumps(signatures),
            "MAX_LIST": MAX_LIST,
            "QUOTED_CHARS": QUOTED_CHARS,
            "P5_CLOSE": json.dumps(P5_CLOSE),
        },
    )


def fill(template: str, values: dict[str, object]) -> str:
    """The script with each `@@NAME@@` replaced by its value, in one pass (a value is never read for names)."""
    return re.sub(r"@@([A-Z_0-9]+)@@", lambda found: str(values[found.group(1)]), template)
