"""`python -m bench.colour_words [--seeds N]`: what the subject match tells apart, as a table of colour words.

Not a timing benchmark. For every colour word of `ground.palettes`, the procedural sketches of "a WORD hibiscus"
(N seeds each of the named, compact and full styles, from seed 100: paintings the calibration has not seen) and a
rose painting (the named peach sketch with `indianred` petals, the colour a demo run once settled on) are rendered,
and each is read against every word's subject. A cell is the mean petal match (`rewards.subject_match`) of a row's
paintings against a column's subject; then, for each subject, its own weakest painting's match against the strongest
other word's painting, and the margin between them.

`--calibrate` measures instead each wash of the palette table as the renderer lays it on the warm start's paper (a
swatch of three shapes at rising opacity and a double glaze, its paint binned from palest to deepest) and writes
`rewards/colour_words.json`, which the subject match reads. Run it whenever `ground/palettes.py` changes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence

import numpy as np


HELD_OUT_SEED = 100
# Points a wash's curve keeps, each the median colour of an equal share of its paint sorted by depth.
CURVE_POINTS = 12
ROSE = "indianred"
ROSE_ROW = f"rose ({ROSE})"
# The neighbours a person tells apart and a hue reading did not: peach from coral, rose, orange and red; lemon
# (the palette's yellow) from golden.
NEIGHBOURS = (("peach", "coral"), ("peach", ROSE_ROW), ("peach", "orange"), ("peach", "red"), ("yellow", "golden"))

Render = Callable[[Sequence[str]], list[bytes]]


def render(sketches: Sequence[str]) -> list[bytes]:
    from renderers import render_many

    results = render_many(list(sketches), deadline_s=120.0)
    failed = [result.errors for result in results if result.png is None]
    if failed:
        raise RuntimeError(f"{len(failed)} renders failed: {failed[0]}")
    return [result.png for result in results if result.png is not None]


def swatch_sketch(colour: str) -> str:
    """`colour` on the compact style's paper: three shapes at opacity 130, 190 and 230, and two glazes at 210."""
    from watercolour.policy.procedural import COMPACT_HEAD, PAPERS

    def shape(fill: int, left: int, top: int, right: int, bottom: int) -> list[str]:
        corners = ((left, top), (right, top), (right, bottom), (left, bottom))
        return [
            f'  brush.fill("{colour}", {fill});',
            "  brush.beginShape(0.6);",
            *(f"  brush.vertex({x}, {y});" for x, y in corners),
            "  brush.endShape(true);",
        ]

    lines = ["  brush.fillBleed(0.25);"]
    for x, fill in ((110, 130), (300, 190), (490, 230)):
        lines += shape(fill, x - 80, 60, x + 80, 280)
    lines += shape(210, 60, 340, 540, 560) * 2
    return COMPACT_HEAD.substitute(paper=PAPERS[0]) + "\n".join(lines) + "\n}\n"


def curve(png: bytes) -> list[list[float]]:
    """The paint of a swatch as CURVE_POINTS CIELAB colours, palest to deepest."""
    from rewards.colour_difference import ciede2000, srgb_to_lab
    from rewards.pixels import analyse

    pixels = analyse(png)
    lab = srgb_to_lab(pixels.rgb[pixels.paint])
    depth = ciede2000(lab, srgb_to_lab(pixels.paper))
    bins = np.array_split(np.argsort(depth), CURVE_POINTS)
    return [[round(float(v), 2) for v in np.median(lab[b], axis=0)] for b in bins]


def calibrate(render: Render = render) -> dict:
    """Every wash the palette table lists, measured on paper: the content of `rewards/colour_words.json`."""
    from ground.palettes import PALETTES, heart_washes, petal_washes
    from watercolour.policy.procedural import PAPERS

    colours = sorted({colour for word in PALETTES for colour in (*petal_washes(word), *heart_washes(word))})
    pngs = render([swatch_sketch(colour) for colour in colours])
    return {"paper": PAPERS[0], "curves": {colour: curve(png) for colour, png in zip(colours, pngs, strict=True)}}


def paintings(seeds: int) -> dict[str, list[str]]:
    """Row -> its sketches: each word's named, compact and full sketches of "a WORD hibiscus", and the rose row."""
    from ground.palettes import NAMED_WASHES, PALETTES
    from watercolour.policy.procedural import compact_sketch, plan_flower, write_sketch

    rows: dict[str, list[str]] = {}
    seeds_used = range(HELD_OUT_SEED, HELD_OUT_SEED + seeds)
    for word in PALETTES:
        subject = f"a {word} hibiscus"
        rows[word] = [
            *(compact_sketch(seed, subject, named_colours=True) for seed in seeds_used),
            *(compact_sketch(seed, subject) for seed in seeds_used),
            *(write_sketch(plan_flower(seed, subject)) for seed in seeds_used),
        ]
    peach = NAMED_WASHES["peach"][:2]
    rows[ROSE_ROW] = [
        compact_sketch(seed, "a peach hibiscus", named_colours=True).replace(f'"{peach[0]}"', f'"{ROSE}"')
        .replace(f'"{peach[1]}"', f'"{ROSE}"')
        for seed in seeds_used
    ]  # fmt: skip
    return rows


def table(seeds: int, render: Render = render) -> tuple[list[str], dict[str, list[list[float]]]]:
    """(subject words, row -> per painting, its petal match against each word's subject)."""
    from ground.palettes import PALETTES
    from rewards.pixels import analyse
    from rewards.subject_match import match_pixels

    words = list(PALETTES)
    rows = paintings(seeds)
    sketches = [sketch for row in rows.values() for sketch in row]
    pictures = iter(render(sketches))
    matches = {}
    for row, row_sketches in rows.items():
        matches[row] = []
        for _ in row_sketches:
            pixels = analyse(next(pictures))
            matches[row].append([match_pixels(pixels, f"a {word} hibiscus").petals for word in words])
    return words, matches


def margin(matches: dict[str, list[list[float]]], words: list[str], subject: str, other: str) -> tuple[float, float]:
    """(the weakest of `subject`'s paintings read as `subject`, the strongest of `other`'s read as `subject`)."""
    column = words.index(subject)
    return min(values[column] for values in matches[subject]), max(values[column] for values in matches[other])


def format_table(words: list[str], matches: dict[str, list[list[float]]]) -> str:
    lines = [
        "| painted \\ read as | " + " | ".join(words) + " |",
        "|---|" + "---:|" * len(words),
    ]
    for row, values in matches.items():
        mean = np.mean(values, axis=0)
        cells = [f"**{m:.2f}**" if row == word else f"{m:.2f}" for word, m in zip(words, mean, strict=True)]
        lines.append(f"| {row} ({len(values)}) | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| subject | its weakest painting | strongest other word's painting | margin |",
        "|---|---:|---|---:|",
    ]
    for word in words:
        own, (other, best) = (
            margin(matches, words, word, word)[0],
            max(
                ((row, margin(matches, words, word, row)[1]) for row in words if row != word), key=lambda pair: pair[1]
            ),
        )
        lines.append(f"| {word} | {own:.2f} | {other} {best:.2f} | {own - best:+.2f} |")
    lines += ["", "| neighbours | as the first: own weakest, other's strongest | margin | as the second | margin |"]
    lines.append("|---|---|---:|---|---:|")
    for first, second in NEIGHBOURS:
        own, other = margin(matches, words, first, second)
        cells = [f"{own:.2f}, {other:.2f}", f"{own - other:+.2f}"]
        if second in words:
            back_own, back_other = margin(matches, words, second, first)
            cells += [f"{back_own:.2f}, {back_other:.2f}", f"{back_own - back_other:+.2f}"]
        else:
            cells += ["-", "-"]
        lines.append(f"| {first} / {second} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_curves(calibration: dict) -> str:
    """The calibration as JSON, one wash's curve a line."""
    curves = ",\n".join(
        f"  {json.dumps(colour)}: {json.dumps(points)}" for colour, points in calibration["curves"].items()
    )
    return f'{{\n "paper": {json.dumps(calibration["paper"])},\n "curves": {{\n{curves}\n }}\n}}\n'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.colour_words", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="Seeds of each sketch style a word (default: 3).")
    parser.add_argument("--calibrate", action="store_true", help="Measure the washes and write the curves file.")
    args = parser.parse_args(argv)
    if args.calibrate:
        from rewards.colour_words import CURVES_FILE

        CURVES_FILE.write_text(format_curves(calibrate()))
        print(f"wrote {CURVES_FILE}")
        return 0
    print(format_table(*table(args.seeds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
