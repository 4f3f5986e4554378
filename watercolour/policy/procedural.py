"""Procedural watercolour flowers: seeded p5.brush sketches written the way a good policy would write them.

Two uses. The warm start trains on them (a small untuned policy rarely passes the gate, so every GRPO group
scores zeros and the run learns nothing), and `ProceduralPolicy` is an honest scripted baseline for benchmarks.
A sketch is planned first (`plan_flower`: every random choice, as data) and then written out (`write_sketch`)
with literal numbers, two tiny helpers and short loops, inside the ten-method allowlist.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from string import Template
from typing import Literal

from ground.palettes import NAMED_WASHES, PALETTES, SPECIES, WHITE_SHADOW, species_of
from ground.prompt import SUBJECTS


Style = Literal["full", "compact", "named"]

# Every filled shape costs p5.brush a mask pass at render time; 30 keeps a render to a few seconds.
MAX_SHAPES = 30


GREENS = (("#9dbf75", "#5e8c3a"), ("#8fb37a", "#4f7a3b"), ("#a9bd72", "#6a8a3c"), ("#93b98a", "#4d7a52"))
PAPERS = ("#f7f1e3", "#f6f0e4", "#faf6ec", "#f4eee0", "#f8f4ea", "#f5efe6")

# Petal outlines: the helper's curvature, then (angle, radius) points around the heart in its a, w and r.
PETAL_OUTLINES: dict[str, tuple[float, tuple[tuple[str, str], ...]]] = {
    "lobed": (0.6, (("a - w", "r * 0.6"), ("a - w * 0.6", "r"), ("a", "r * 0.92"), ("a + w * 0.6", "r"), ("a + w", "r * 0.6"))),
    "rounded": (0.75, (("a - w", "r * 0.55"), ("a - w / 2", "r * 0.95"), ("a", "r"), ("a + w / 2", "r * 0.95"), ("a + w", "r * 0.55"))),
    "pointed": (0.45, (("a - w", "r * 0.45"), ("a", "r"), ("a + w", "r * 0.45"))),
}  # fmt: skip
# How many filled shapes each kind of heart paints (eye: disc, stamen column and pollen; dots: disc and six).
HEARTS = {"eye": 3, "disc": 2, "dots": 7, "trumpet": 2, "button": 2}


@dataclass(frozen=True)
class FlowerPlan:
    """Every choice behind one sketch; `write_sketch` turns it into text with no further randomness."""

    subject: str
    species: str
    palette: tuple[str, str, str, str]
    greens: tuple[str, str]
    paper: str
    centre: tuple[int, int]
    reach: int
    layers: int
    rings: tuple[tuple[int, float, int], ...]  # (petal count, reach scale, half-width in degrees)
    rotation: int
    bleed: float
    texture: tuple[float, float]
    leaves: tuple[tuple[int, int, int, int], ...]  # (x, y, angle, length)
    stem: tuple[tuple[int, int], ...]
    loops: bool  # write the first wash as a loop too, rather than one call per petal
    seed: int

    @property
    def petal_count(self) -> int:
        return self.rings[0][0]


def polar(x: float, y: float, angle: float, radius: float) -> tuple[int, int]:
    """The canvas point `radius` units from (x, y) along `angle` degrees, rounded to whole units."""
    return round(x + radius * math.cos(math.radians(angle))), round(y + radius * math.sin(math.radians(angle)))


def _shade(colour: str, rng: random.Random) -> str:
    shift = rng.randint(-10, 10)
    channels = (int(colour[i : i + 2], 16) + shift + rng.randint(-4, 4) for i in (1, 3, 5))
    return "#" + "".join(f"{min(255, max(0, c)):02x}" for c in channels)


def plan_flower(seed: int, subject: str | None = None) -> FlowerPlan:
    """Draw every choice for one painting from `seed`; the subject picks the species and the palette."""
    rng = random.Random(seed)
    subject = subject or rng.choice(SUBJECTS)
    text = subject.lower()
    species = species_of(subject)
    kind = SPECIES[species]
    # The first colour word names the petals ("white ... with a crimson eye" is a white flower).
    named = sorted((text.find(word), word) for word in PALETTES if word in text)
    palette = tuple(_shade(c, rng) for c in PALETTES[named[0][1] if named else kind.colour])
    if len(named) > 1:
        palette = (*palette[:3], PALETTES[named[1][1]][2])
    x, y = rng.randint(284, 316), rng.randint(262, 296)
    # Petals reach 200-240 units (the prompt's number) but stop short of the paper's edge.
    reach = min(rng.randint(200, 238), min(x, 600 - x, y, 600 - y) - 14)
    rings = tuple(
        (count := rng.randint(*counts), scale, round(180 / count * width * rng.uniform(0.92, 1.08)))
        for counts, scale, width in kind.rings
    )
    # The stem starts under the lower petals, so it never shows through the glazes at the heart.
    top, bottom = (x, y + round(reach * 0.55)), (x + rng.randint(-40, 40), 592)
    middle = ((top[0] + bottom[0]) // 2 + rng.randint(-12, 12), (top[1] + bottom[1]) // 2)
    stem = (
        (top[0] - 4, top[1]), (middle[0] - 6, middle[1]), (bottom[0] - 8, bottom[1]),
        (bottom[0] + 8, bottom[1]), (middle[0] + 6, middle[1]), (top[0] + 4, top[1]),
    )  # fmt: skip
    bases = [top] + [middle] * rng.randint(0, 2)
    leaves = []
    for base in bases:
        # Under the head a leaf hangs down and out; off the stem it rises.
        sides = ((120, 170), (10, 60)) if base == top else ((195, 235), (-55, -15))
        angle = rng.randint(*rng.choice(sides))
        length = rng.randint(round(reach * 0.8), reach) if base == top else rng.randint(100, 150)
        # Shorten a leaf until its tip lies on the paper: coordinates outside 0-600 paint nothing.
        while not all(8 <= v <= 592 for v in polar(*base, angle, length)):
            length -= 10
        leaves.append((*base, angle % 360, length))
    budget = MAX_SHAPES - 1 - len(leaves) - HEARTS[kind.centre]
    layers = max(1, min(rng.choice((2, 3, 3)), budget // sum(count for count, _, _ in rings)))
    return FlowerPlan(
        subject=subject,
        species=species,
        palette=palette,  # type: ignore[arg-type]
        greens=rng.choice(GREENS),
        paper=rng.choice(PAPERS),
        centre=(x, y),
        reach=reach,
        layers=layers,
        rings=rings,
        rotation=rng.randint(0, 359),
        bleed=round(rng.uniform(0.22, 0.32), 2),
        texture=(round(rng.uniform(0.3, 0.6), 1), round(rng.uniform(0.3, 0.6), 1)),
        leaves=tuple(leaves),
        stem=stem,
        loops=rng.random() < 0.5,
        seed=seed,
    )


# No comment line above the code: warm-started 135M samples continued a leading `// subject` comment as free
# text until the budget ran out (4 of 4 samples at temperature 0.7, docs/learning.md).
SKETCH_HEAD = Template("""const CX = $cx;
const CY = $cy;

async function setup() {
  createCanvas(600, 600, WEBGL);
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  noLoop();
}

function v(x, y, a, r) {
  brush.vertex(x + r * cos(a), y + r * sin(a));
}

function petal(a, r, w) {
  brush.beginShape($curvature);
  brush.vertex(CX, CY);
$outline
  brush.endShape(true);
}

function leaf(x, y, a, l) {
  brush.beginShape(0.5);
  brush.vertex(x, y);
  v(x, y, a - 22, l * 0.5);
  v(x, y, a, l);
  v(x, y, a + 22, l * 0.5);
  brush.endShape(true);
}

function draw() {
  translate(-width / 2, -height / 2);
  background("$paper");
  brush.noStroke();
  brush.fillTexture($texture);
  // stem and leaves first, so the petals glaze over them
""")


def _wash(colour: str, opacity: int, bleed: float) -> list[str]:
    return [f'  brush.fill("{colour}", {opacity});', f"  brush.fillBleed({max(0.15, round(bleed, 2))});"]


def _petals(plan: FlowerPlan, rng: random.Random) -> list[str]:
    lines = ["  // petals: a big pale wash, then smaller, more opaque glazes"]
    for layer in range(plan.layers):
        opacity = (rng.randint(168, 186), rng.randint(190, 208), rng.randint(212, 228))[layer]
        lines += _wash(plan.palette[layer], opacity, plan.bleed - 0.05 * layer)
        for count, scale, width in plan.rings:
            reach = round(plan.reach * scale * (1.0, 0.76, 0.5)[layer])
            # An inner ring sits between the outer petals; each glaze turns a little, as a hand would.
            offset = round(plan.rotation + (180 / count if scale < 1 else 0) + 4 * layer) % 360
            # Inner glazes are regular enough for a loop; the first wash may be written petal by petal.
            if plan.loops or layer > 0:
                step = f"{360 / count:.1f}".removesuffix(".0")
                lines += [
                    f"  for (let i = 0; i < {count}; i++) {{",
                    f"    petal({offset} + i * {step}, {reach}, {width});",
                    "  }",
                ]
                continue
            for i in range(count):
                angle = round(offset + i * 360 / count + rng.uniform(-6, 6)) % 360
                size = min(plan.reach, round(reach * rng.uniform(0.95, 1.03)))
                lines.append(f"  petal({angle}, {size}, {round(width * rng.uniform(0.9, 1.1))});")
    return lines


def _heart(plan: FlowerPlan, rng: random.Random) -> list[str]:
    r, deep, heart = plan.reach, plan.palette[2], plan.palette[3]
    kind = SPECIES[plan.species].centre
    lines = ["  // the heart"]
    if kind == "eye":
        angle = rng.randint(0, 359)
        tip = polar(*plan.centre, angle, round(r * 0.45))
        column = (polar(*plan.centre, angle - 90, 4), polar(*tip, angle - 90, 3), polar(*tip, angle + 90, 3))
        lines += [*_wash(heart, 215, 0.2), f"  brush.circle(CX, CY, {round(r * 0.16)}, 0.4);"]
        lines += [*_wash("#f3d36b", 210, 0.15), "  brush.beginShape(0.2);"]
        lines += [f"  brush.vertex({vx}, {vy});" for vx, vy in (*column, polar(*plan.centre, angle + 90, 4))]
        lines += [
            "  brush.endShape(true);",
            *_wash("#e8a33a", 225, 0.15),
            f"  brush.circle({tip[0]}, {tip[1]}, 10, 0.3);",
        ]
    elif kind == "dots":
        ring, turn = round(r * 0.22), rng.randint(0, 59)
        lines += [*_wash(heart, 220, 0.2), f"  brush.circle(CX, CY, {round(r * 0.15)}, 0.4);"]
        dot = f"brush.circle(CX + {ring} * cos({turn} + i * 60), CY + {ring} * sin({turn} + i * 60), 7, 0.3);"
        lines += ["  for (let i = 0; i < 6; i++) {", f"    {dot}", "  }"]
    else:
        outer, inner = {"disc": (0.33, 0.2), "trumpet": (0.3, 0.14), "button": (0.12, 0.06)}[kind]
        first, second = {"disc": (heart, "#3b2414"), "trumpet": (deep, "#e0701c"), "button": (heart, "#d99a2b")}[kind]
        lines += [*_wash(first, 215, 0.2), f"  brush.circle(CX, CY, {round(r * outer)}, 0.5);"]
        lines += [*_wash(second, 225, 0.15), f"  brush.circle(CX, CY, {round(r * inner)}, 0.4);"]
    return lines


def write_sketch(plan: FlowerPlan) -> str:
    """The plan as sketch text: the prompt's skeleton, two helpers, stem and leaves, glazed petals, the heart."""
    rng = random.Random(plan.seed + 1)
    curvature, outline = PETAL_OUTLINES[SPECIES[plan.species].shape]
    light, dark = plan.greens
    head = SKETCH_HEAD.substitute(
        cx=plan.centre[0],
        cy=plan.centre[1],
        curvature=curvature,
        outline="\n".join(f"  v(CX, CY, {angle}, {radius});" for angle, radius in outline),
        paper=plan.paper,
        texture=f"{plan.texture[0]}, {plan.texture[1]}",
    )
    lines = [
        *_wash(dark, rng.randint(190, 210), 0.2),
        "  brush.beginShape(0.3);",
        *(f"  brush.vertex({x}, {y});" for x, y in plan.stem),
        "  brush.endShape(true);",
        *_wash(light, rng.randint(175, 195), plan.bleed),
        *(f"  leaf({x}, {y}, {a}, {length});" for x, y, a, length in plan.leaves),
        *_petals(plan, rng),
        *_heart(plan, rng),
        "}",
    ]
    return head + "\n".join(lines) + "\n"


def generate_sketch(seed: int, subject: str | None = None) -> str:
    """A complete, valid p5.brush sketch of `subject` (or a seeded choice of subject); same seed, same text."""
    return write_sketch(plan_flower(seed, subject))


# The compact style: the prompt's skeleton, one loop of petals with literal numbers, and a centre. 310-360 SmolLM2
# tokens against 760-1150 for a full sketch, for a policy too small to learn the full template (docs/learning.md).
# A second petal loop would add ~170 tokens, past the 400-token budget the compact warm start uses.
COMPACT_HEAD = Template("""async function setup() {
  createCanvas(600, 600, WEBGL);
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  noLoop();
}

function draw() {
  translate(-width / 2, -height / 2);
  background("$paper");
  brush.noStroke();
""")


# Petal reach in the compact style, in tens. At 120 a peach hibiscus covers ~4% of the canvas, at 250 ~15%.
COMPACT_REACH = (120, 250)
# A repainted flower may grow past the drawn reach up to this: the petals' tips stay 20 units inside the sheet.
COMPACT_REACH_LIMIT = 280


def compact_sketch(
    seed: int, subject: str | None = None, named_colours: bool = False, grow: int = 0, deep: bool = False
) -> str:
    """A short sketch of `subject`: one loop of 5-8 petals around (300, 300), each 3-4 literal vertices.

    `named_colours` writes the colours as CSS names (`NAMED_WASHES`) instead of the palette's hex washes. `grow` and
    `deep` revise the seeded sketch, everything else equal (the repaint warm start's second paintings,
    `watercolour.training.repaint_examples`): petals `grow` units longer (up to `COMPACT_REACH_LIMIT`), and the
    palette's deep wash instead of the seeded one.
    """
    rng = random.Random(seed)
    subject = subject or rng.choice(SUBJECTS)
    text = subject.lower()
    species = species_of(subject)
    named = sorted((text.find(word), word) for word in PALETTES if word in text)
    name = named[0][1] if named else SPECIES[species].colour
    palette = PALETTES[name]
    # Colours are the palette's own, unshaded, and the paper is always the same: six free hex digits per colour
    # are what warm-started samples got wrong most (a petal wash the colour of the paper, a five-digit hex). The
    # petals take the mid or the deep wash, a choice the scorers can tell apart. One wash must carry the flower:
    # white petals get a deeper cool shadow than the full style's glazes.
    colour = WHITE_SHADOW if name == "white" else rng.choice(palette[1:3])
    if deep and name != "white":
        colour = palette[2]
    # A second colour word colours the heart ("a white hibiscus with a crimson eye"), as in the full style.
    heart = PALETTES[named[1][1]][2] if len(named) > 1 else palette[3]
    if named_colours:
        washes = NAMED_WASHES[name]
        colour = washes[0] if colour == palette[1] else washes[1]
        heart = NAMED_WASHES[named[1][1]][1] if len(named) > 1 else washes[2]
    count = rng.randint(5, 8)
    # The size is drawn wide on purpose, in tens (one digit to choose, not three): a policy warm-started on these
    # sketches is unsure how big to paint, and how big is what the coverage-led scorers reward most, so GRPO has
    # a choice to learn from. The full style keeps the prompt's 200-240.
    reach, width = (
        rng.randrange(COMPACT_REACH[0], COMPACT_REACH[1] + 1, 10),
        round(180 / count * rng.uniform(0.75, 0.95)),
    )
    reach = min(COMPACT_REACH_LIMIT, reach + grow) if grow else reach
    # From the centre out to the petal's two shoulders, with or without a tip between them.
    angles = ["a - {w}", "a", "a + {w}"] if rng.random() < 0.5 else ["a - {w}", "a + {w}"]
    lines = [
        # The deep wash: one pale layer covers too little paper (coverage 0.04 on a peach hibiscus, 0.006 on white).
        f'  brush.fill("{colour}", {rng.randint(200, 230)});',
        f"  brush.fillBleed({round(rng.uniform(0.2, 0.3), 2)});",
        f"  for (let i = 0; i < {count}; i++) {{",
        f"    const a = {rng.randint(0, 71)} + i * {f'{360 / count:.1f}'.removesuffix('.0')};",
        f"    brush.beginShape({round(rng.uniform(0.5, 0.7), 1)});",
        "    brush.vertex(300, 300);",
        *(
            f"    brush.vertex(300 + {reach} * cos({angle}), 300 + {reach} * sin({angle}));".format(w=width)
            for angle in angles
        ),
        "    brush.endShape(true);",
        "  }",
        f'  brush.fill("{heart}", {rng.randint(210, 230)});',
        f"  brush.circle(300, 300, {rng.randint(18, 36)}, 0.3);",
        "}",
    ]
    return COMPACT_HEAD.substitute(paper=PAPERS[0]) + "\n".join(lines) + "\n"


def reply(subject: str, sketch: str) -> str:
    """A sketch as the assistant's answer: one fixed sentence naming the subject, then the fenced sketch.

    The sentence is the same every time on purpose: warm-started SmolLM2-135M samples fell into repetition loops
    in a free-text preamble that varied from example to example (docs/learning.md).
    """
    return f"Here is {subject} in loose watercolour.\n\n```javascript\n{sketch.strip()}\n```"


def completion(seed: int, subject: str | None = None, style: Style = "full", title: str | None = None) -> str:
    """The seeded sketch as an assistant reply (see `reply`, which names `title`, by default the subject), in the
    full, the compact or the named style."""
    plan = plan_flower(seed, subject)
    if style == "full":
        return reply(title or plan.subject, write_sketch(plan))
    return reply(title or plan.subject, compact_sketch(seed, plan.subject, named_colours=style == "named"))


def flower_only(subject: str) -> str:
    """The subject without its colours: "a peach hibiscus" -> "a hibiscus", "an orange marigold" -> "a marigold"."""
    flower = species_of(subject)
    return ("an " if flower[0] in "aeiou" else "a ") + flower


SUBJECT_IN_PROMPT = re.compile(r"Paint (.+?) in loose watercolour", re.IGNORECASE)


class ProceduralPolicy:
    """A scripted baseline with the policy interface: `generate(prompts, n)` gives n completions per prompt.

    A prompt is a user text or a chat message list; the subject is read from its last message. Completion k of
    call c uses seed `seed + 1000 * c + k`, so repeated calls keep painting new, reproducible flowers.
    """

    name = "procedural"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._calls = 0

    def generate(self, prompts: Sequence[str | list[dict]], n: int = 1) -> list[list[str]]:
        outputs = []
        for prompt in prompts:
            text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
            match = SUBJECT_IN_PROMPT.search(text)
            base = self.seed + 1000 * self._calls
            outputs.append([completion(base + k, match.group(1) if match else None) for k in range(n)])
            self._calls += 1
        return outputs
