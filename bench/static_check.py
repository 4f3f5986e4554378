"""`python -m bench.static_check [--kb 256] [--json]`: the static check's time on every nesting shape, up to the limit.

The static check reads a sketch's parse tree in a few passes; before it was linear, a shape nested a few thousand deep
made one rule read a subtree per level (`a[a[a[...]]]`: 28 s for a few kB), and the check ran on the event loop that
renders and scores. Each shape below is one that was quadratic (or a neighbour of one), built to the given size (the
OpenEnv action limit is 256 kB; the gate's default length limit refuses anything over 24,000 characters before
parsing). The table gives the CPU seconds of `ground.sketch.inventory` at the full size and at a quarter of it, and
their ratio: about 4 for a linear check, 16 for a quadratic one. CPU seconds, not wall: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable


HEAD = "function setup() { createCanvas(600, 600, WEBGL); let a = [1]; let x = "
TAIL = "; }"


def _nested(opening: str, closing: str, middle: str = "1") -> Callable[[int], str]:
    def build(size: int) -> str:
        depth = max(1, (size - len(HEAD) - len(TAIL) - len(middle)) // (len(opening) + len(closing)))
        return HEAD + opening * depth + middle + closing * depth + TAIL

    return build


def _repeated(unit: str, head: str = HEAD, tail: str = "1" + TAIL) -> Callable[[int], str]:
    def build(size: int) -> str:
        return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail

    return build


# Shape -> source of about `size` bytes. The first of each group was quadratic before; the rest are its neighbours.
SHAPES: dict[str, Callable[[int], str]] = {
    "nested indexes a[a[...]]": _nested("a[", "]", "0"),
    "nested string indexes a['x'+a[...]]": _nested("a['x'+", "]", "0"),
    "nested global indexes window[...]": _nested("window[", "]", "0"),
    "member chain a.b.b...": _repeated(".b", head=HEAD + "a", tail=TAIL),
    "call chain f()()...": _repeated("()", head=HEAD + "f", tail=TAIL),
    "nested calls f(f(...))": _nested("f(", ")"),
    "nested new (new (...))": _nested("new (", ")"),
    "and chain f() && ...": _repeated("f()&&"),
    "brush results in a chain": _repeated("brush.circle(1,1,1)||"),
    "sequence a, a, ...": _repeated("a,"),
    "nested templates `${`${...}`}`": _nested("`${", "}`"),
    "computed destructuring": _nested("function({[", "]: q}){}"),
    "nested parentheses": _nested("(", ")"),
    "nested arrows": _nested("() => (", ")"),
    "nested objects": _nested("{a:", "}"),
    "sum a + a + ...": _repeated("a+"),
    "control characters": _repeated("\x01", head=HEAD + "'", tail="'" + TAIL),
    "HTML-like comments": _repeated("a<!--a;\n"),
    "private-use characters": lambda size: HEAD + "'" + "".join(map(chr, range(0xF0000, 0xF0000 + size // 4))) + "'",
}


def cpu_seconds(source: str) -> float:
    from ground.sketch import inventory

    started = time.process_time()
    inventory(source)
    return time.process_time() - started


def measure(kb: int) -> list[dict]:
    size = kb * 1024
    rows = []
    for name, build in SHAPES.items():
        full, quarter = build(size), build(size // 4)
        full_s, quarter_s = cpu_seconds(full), cpu_seconds(quarter)
        rows.append(
            {
                "shape": name,
                "kB": round(len(full.encode()) / 1024),
                "cpu_s": round(full_s, 3),
                "quarter_cpu_s": round(quarter_s, 3),
                "ratio": round(full_s / max(quarter_s, 1e-6), 1),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.static_check", description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=256, help="the size of each shape in kB (default: the 256 kB limit)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    rows = measure(args.kb)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'shape':<38}{'kB':>5}{'cpu s':>8}{'at 1/4':>8}{'ratio':>7}")
    for row in rows:
        print(f"{row['shape']:<38}{row['kB']:>5}{row['cpu_s']:>8}{row['quarter_cpu_s']:>8}{row['ratio']:>7}")
    print(f"slowest: {max(row['cpu_s'] for row in rows)} CPU s (a linear check's ratio is about 4)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
