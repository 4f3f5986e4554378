"""The painting task: the system prompt, the closed list of brush methods, the subjects and the chat messages.

`ALLOWLIST` is the one source of truth for which `brush.*` methods a sketch may call, and the `P5_*` and `JS_*`
tables for every other global name it may use: the prompt lists them and the gate refuses anything else, so
the two cannot drift apart (the published recipe enforced its list only in the prompt while its gate accepted
all 47 p5.brush methods and any other global).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


ArgumentKind = Literal["number", "string", "boolean", "close"]


@dataclass(frozen=True)
class BrushMethod:
    """One brush method as the prompt lists it and the gate checks it: its arguments in order, as (name, kind), how
    many trailing ones a call may leave out, and what it does."""

    arguments: tuple[tuple[str, ArgumentKind], ...]
    optional: int
    purpose: str

    @property
    def kinds(self) -> tuple[ArgumentKind, ...]:
        return tuple(kind for _, kind in self.arguments)

    @property
    def required(self) -> int:
        """How many leading arguments a call must pass."""
        return len(self.arguments) - self.optional

    def signature(self, name: str) -> str:
        """`circle(x, y, radius[, scribble])`: the optional arguments in brackets, nested when several."""
        names = [argument for argument, _ in self.arguments]
        shown = ", ".join(names[: self.required])
        for argument in names[self.required :]:
            shown += f"[{', ' if shown else ''}{argument}"
        return f"{name}({shown}{']' * self.optional})"


# The ten methods, in the order the prompt lists them. A call passes the listed arguments, of the listed kinds, and
# no more: p5.brush's own extras (fillBleed's direction, a third fillTexture argument, vertex's pressure) paint flat,
# hard-edged shapes the prompt never asked for. A trailing argument may be left out only where p5.brush 2.2.2 gives it
# a default inside the prompt's own range (read from its source, `src/fill/fill.js` and `src/core/primitives.js`):
# - fill's opacity: `(opacity) || 150`, the prompt's floor;
# - fillTexture's two strengths: 0.4 each, inside 0-1;
# - beginShape's curvature: 0, inside 0-1;
# - circle's scribble: `false`, which paints as 0 (no roughening), inside 0-1.
# Every other argument is required: scaleBrushes, fillBleed and vertex have no default (p5.brush computes with
# `undefined` and paints nothing, or NaN), fill has none for its colour, circle none for its centre and radius, and
# endShape's default, `false`, leaves the shape open where the prompt asks for `true`.
# A number is a finite one; "close" is true, false or CLOSE, the constant the prompt lists for endShape (p5.brush
# closes the shape on any truthy argument).
BRUSH_METHODS: dict[str, BrushMethod] = {
    "scaleBrushes": BrushMethod((("factor", "number"),), 0, "scales every brush; call it once in setup with 3"),
    "noStroke": BrushMethod((), 0, "turns outlines off; call it before painting"),
    "fill": BrushMethod(
        (("colorHex", "string"), ("opacity", "number")),
        1,
        "sets the wash for the next shapes; opacity 0-255, at least 150 (150 when left out)",
    ),
    "noFill": BrushMethod((), 0, "stops filling shapes"),
    "fillBleed": BrushMethod((("amount", "number"),), 0, "how far the wash bleeds past the edge, 0-1; use 0.2-0.3"),
    "fillTexture": BrushMethod(
        (("amount", "number"), ("borderIntensity", "number")),
        2,
        "paper grain inside the wash and at its rim, both 0-1 (0.4 when left out)",
    ),
    "beginShape": BrushMethod(
        (("curvature", "number"),), 1, "starts a filled shape; curvature 0-1 rounds its corners (0 when left out)"
    ),
    "vertex": BrushMethod((("x", "number"), ("y", "number")), 0, "adds a corner to the open shape"),
    "endShape": BrushMethod((("true", "close"),), 0, "closes the shape and paints it"),
    "circle": BrushMethod(
        (("x", "number"), ("y", "number"), ("radius", "number"), ("scribble", "number")),
        1,
        "paints a filled disc; scribble 0-1 roughens its edge (0 when left out)",
    ),
}
ALLOWLIST: tuple[str, ...] = tuple(BRUSH_METHODS)
# The kinds of each method's arguments, all of them in order, and how many a call must pass (the rest may be left out).
BRUSH_ARGUMENTS: dict[str, tuple[ArgumentKind, ...]] = {name: method.kinds for name, method in BRUSH_METHODS.items()}
BRUSH_REQUIRED: dict[str, int] = {name: method.required for name, method in BRUSH_METHODS.items()}


def brush_arguments_wanted(name: str) -> str:
    """What a brush method takes, in words for a refusal: "brush.fill(colorHex[, opacity]) takes a string, then
    optionally a finite number"."""
    method = BRUSH_METHODS[name]
    said = {"number": "a finite number", "close": "true, false or CLOSE"}
    words = [said.get(kind, f"a {kind}") for kind in method.kinds]

    def listed(part: list[str]) -> str:
        return " and ".join([", ".join(part[:-1]), part[-1]] if len(part) > 1 else part)

    required, optional = words[: method.required], words[method.required :]
    takes = listed(required) or ("nothing" if not optional else "")
    if optional:
        takes += (", then optionally " if required else "optionally ") + listed(optional)
    return f"brush.{method.signature(name)} takes {takes}"


# The canvas every sketch paints on, in its own units: createCanvas(600, 600, WEBGL).
CANVAS_SIZE = 600

# The calls that put pigment down; a sketch with none of them cannot paint anything.
PAINTING_METHODS: tuple[str, ...] = ("endShape", "circle")

# The other global names a sketch may use, by how it may use them (`ground.sketch` enforces the how).
# Called as statements only: in p5 2.3 `translate`, `background` and `createCanvas` return the renderer, whose
# drawing context and p5 instance are one property away, so their results may not be used.
P5_STATEMENTS: tuple[str, ...] = tuple(
    "createCanvas background angleMode noLoop translate rotate scale push pop randomSeed noiseSeed".split()
)
# Called, anywhere: each returns a number (`random(list)` an element of the sketch's own list).
P5_MATHS: tuple[str, ...] = tuple(
    "abs ceil constrain dist exp floor fract lerp log mag map max min norm pow round sq sqrt sin cos tan asin acos "
    "atan atan2 degrees radians random randomGaussian noise".split()
)
P5_CONSTANTS: tuple[str, ...] = tuple(
    "width height PI TWO_PI HALF_PI QUARTER_PI TAU DEGREES RADIANS WEBGL CLOSE".split()
)
JS_FUNCTIONS: tuple[str, ...] = ("parseInt", "parseFloat", "isFinite", "isNaN", "Array")
JS_CONSTANTS: tuple[str, ...] = ("NaN", "Infinity")
# Namespaces: only these static members, never the object itself (`Object.getPrototypeOf` reaches the page).
JS_NAMESPACES: dict[str, tuple[str, ...]] = {
    "Math": tuple(
        "abs acos acosh asin asinh atan atan2 atanh cbrt ceil clz32 cos cosh exp expm1 floor fround hypot imul log "
        "log10 log1p log2 max min pow random round sign sin sinh sqrt tan tanh trunc E LN10 LN2 LOG10E LOG2E PI "
        "SQRT1_2 SQRT2".split()
    ),
    "Number": ("isFinite", "isInteger", "parseFloat", "parseInt", "EPSILON"),
    "Array": ("from", "isArray", "of"),
}

DEFAULT_SUBJECT = "a peach hibiscus"
SUBJECTS: tuple[str, ...] = (
    DEFAULT_SUBJECT,
    "a white hibiscus with a crimson eye",
    "a magenta hibiscus",
    "a yellow hibiscus",
    "a coral hibiscus",
    "a single pink peony",
    "a red poppy",
    "a sunflower",
    "a pale blue morning glory",
    "a white camellia",
    "an orange marigold",
    "a purple anemone",
    "a golden daffodil",
)

_METHOD_LINES = "\n".join(
    f"- brush.{method.signature(name)}: {method.purpose}." for name, method in BRUSH_METHODS.items()
)
_OTHER_NAMES = (
    f"the p5 calls {', '.join(P5_STATEMENTS)} (as statements); the p5 maths {', '.join(P5_MATHS)}; the constants "
    f"{', '.join(P5_CONSTANTS + JS_CONSTANTS)}; {', '.join(JS_FUNCTIONS)}; "
    + "; ".join(f"{name}.{'/'.join(members) if len(members) < 8 else '*'}" for name, members in JS_NAMESPACES.items())
)

# The numbers are explicit because vague words failed in the published recipe's measurements: "soft translucent
# washes" came out at opacity ~40 and left no visible paint, and a model that copied the translate still painted
# at negative, centred coordinates until the 0-600 range was spelled out.
SYSTEM_PROMPT = f"""You are a watercolour painter who works in code. You paint by writing one p5.js sketch that \
uses the p5.brush library, which is already loaded and available as the global object `brush`.

Reply with the complete sketch in a single JavaScript code block. Keep this shape:
- An async function setup() that calls createCanvas(600, 600, WEBGL), then brush.scaleBrushes(3), then \
angleMode(DEGREES), then noLoop().
- A function draw() that first calls translate(-width / 2, -height / 2), then background() with a pale paper \
colour, and then paints.

The canvas after that translate:
- x and y both run from 0 to 600, with (0, 0) at the top-left corner and the centre at (300, 300).
- Every coordinate you pass must lie between 0 and 600; anything outside paints nothing.
- Angles are in degrees. Colours are hex strings such as "#e98a6b".

Composition:
- One flower, centred, filling most of the frame, on pale cream or off-white paper. Leave a margin of paper \
around it; never paint a dark ground or cover the whole sheet.
- Build each petal from layered washes: paint it two or three times, first a large pass at its full size, then \
a smaller, more opaque pass inside it, and if you like a small deeper pass near the heart of the flower.
- Petals reach roughly 200 to 240 units out from the centre. Add a stem and leaves in greens.
- Opacity is never below 150 anywhere and sits between 180 and 230 on petals; keep fillBleed between 0.2 \
and 0.3. Thin, pale washes dry to nothing.

Every mark is a filled shape. Call brush.fill before each shape. A petal or leaf is brush.beginShape, three or \
more brush.vertex calls, then brush.endShape(true). A stem is a long, narrow filled shape, not a line. \
brush.circle paints a filled disc.

These ten methods are the whole of `brush`; nothing else exists on it, and brushes cannot be chosen by name. \
Pass the arguments listed and no more; an argument in brackets may be left out:
{_METHOD_LINES}

Do not use plain p5 drawing functions such as ellipse, rect, line, circle, vertex, beginShape or endShape \
without `brush.` in front; do not draw text; do not load images, fonts or files, and make no network \
requests. Besides `brush` and your own variables and functions (declare each with let, const or function), \
the only names a sketch may use are {_OTHER_NAMES}. Loops, conditions, arrays and objects are fine."""


# The short prompt keeps what the gate checks (the skeleton, the 0-600 canvas, the closed method list, no plain p5
# drawing, nothing fetched) and drops the composition advice. It is ~150 SmolLM2 tokens against ~870 for the full
# one. On a CPU every prompt token is run forward and backward in every GRPO update and every SFT row, so the
# demo's warm-started 135M policy uses it (docs/learning.md); a policy that has not been warm-started needs the
# full prompt's explanations.
SHORT_SYSTEM_PROMPT = f"""You paint watercolours in code: one p5.js sketch using the p5.brush library, loaded as \
the global `brush`. Reply with the complete sketch in one JavaScript code block. setup() is async and calls \
createCanvas(600, 600, WEBGL), brush.scaleBrushes(3), angleMode(DEGREES) and noLoop(). draw() calls \
translate(-width / 2, -height / 2) and background() with a pale paper colour, then paints one centred flower; x \
and y run from 0 to 600. The only brush methods are {", ".join(ALLOWLIST)}. Opacity 150-230, fillBleed \
0.2-0.3. No plain p5 drawing functions, text, images, files or network requests."""

PromptStyle = Literal["full", "short"]


def system_prompt(style: PromptStyle = "full") -> str:
    """The system message: the skeleton, the canvas rules, the composition and the closed method list (the short
    style keeps the skeleton, the canvas and the method list)."""
    return SHORT_SYSTEM_PROMPT if style == "short" else SYSTEM_PROMPT


def user_prompt(subject: str = DEFAULT_SUBJECT) -> str:
    """The user message for one painting."""
    return f"Paint {subject} in loose watercolour."


def messages(subject: str = DEFAULT_SUBJECT, style: PromptStyle = "full") -> list[dict]:
    """The chat-format conversation the policy completes: a system and a user message."""
    return [{"role": "system", "content": system_prompt(style)}, {"role": "user", "content": user_prompt(subject)}]
