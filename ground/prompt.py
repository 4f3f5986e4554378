"""The painting task: the system prompt, the closed list of brush methods, the subjects and the chat messages.

`ALLOWLIST` is the one source of truth for which `brush.*` methods a sketch may call, and the `P5_*` and `JS_*`
tables for every other global name it may use: the prompt lists them and the gate refuses anything else, so
the two cannot drift apart (the published recipe enforced its list only in the prompt while its gate accepted
all 47 p5.brush methods and any other global).
"""

from __future__ import annotations

from typing import Literal


# Name -> (signature, what it does and the values it takes). Order is the order the prompt lists them in.
BRUSH_METHODS: dict[str, tuple[str, str]] = {
    "scaleBrushes": ("scaleBrushes(factor)", "scales every brush; call it once in setup with 3"),
    "noStroke": ("noStroke()", "turns outlines off; call it before painting"),
    "fill": ("fill(colorHex, opacity)", "sets the wash for the next shapes; opacity 0-255, at least 150"),
    "noFill": ("noFill()", "stops filling shapes"),
    "fillBleed": ("fillBleed(amount)", "how far the wash bleeds past the edge, 0-1; use 0.2-0.3"),
    "fillTexture": ("fillTexture(amount, borderIntensity)", "paper grain inside the wash and at its rim, both 0-1"),
    "beginShape": ("beginShape(curvature)", "starts a filled shape; curvature 0-1 rounds its corners"),
    "vertex": ("vertex(x, y)", "adds a corner to the open shape"),
    "endShape": ("endShape(true)", "closes the shape and paints it"),
    "circle": ("circle(x, y, radius, scribble)", "paints a filled disc; scribble 0-1 roughens its edge"),
}
ALLOWLIST: tuple[str, ...] = tuple(BRUSH_METHODS)
# The kind of each argument a method takes, in the order its signature lists them: a call with other arguments is
# refused (`brush_arguments`). All 60,428 brush calls of 701 sketches (the seed pool, 624 of the procedural
# painter's in three styles, the bench sketches, the hacks, the passing and honest fixtures) take exactly these;
# p5.brush's own optional extras (fillBleed's direction, more fillTexture arguments) paint flat, hard-edged shapes
# the prompt never asked for. A number is a finite one; "close" is true, false or CLOSE, the constant the prompt lists
# for endShape (p5.brush closes the shape on any truthy argument).
ArgumentKind = Literal["number", "string", "boolean", "close"]
BRUSH_ARGUMENTS: dict[str, tuple[ArgumentKind, ...]] = {
    "scaleBrushes": ("number",),
    "noStroke": (),
    "fill": ("string", "number"),
    "noFill": (),
    "fillBleed": ("number",),
    "fillTexture": ("number", "number"),
    "beginShape": ("number",),
    "vertex": ("number", "number"),
    "endShape": ("close",),
    "circle": ("number", "number", "number", "number"),
}


def brush_arguments_wanted(name: str) -> str:
    """What a brush method takes, in words for a refusal: "brush.fill(colorHex, opacity) takes a string and a ..."."""
    said = {"number": "a finite number", "close": "true, false or CLOSE"}
    words = [said.get(kind, f"a {kind}") for kind in BRUSH_ARGUMENTS[name]]
    listed = " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words) or "nothing"
    return f"brush.{BRUSH_METHODS[name][0]} takes {listed}"


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

_METHOD_LINES = "\n".join(f"- brush.{signature}: {purpose}." for signature, purpose in BRUSH_METHODS.values())
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

These ten methods are the whole of `brush`; nothing else exists on it, and brushes cannot be chosen by name:
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
