"""`python -m bench.text_reader [--seeds N]`: what the gate's text reader reads, over N render seeds; one table.

Not a timing benchmark: it measures the margin of `rewards.picture_rules`' bars. Negatives are paintings that hold
no text (the seed pool, 24 procedural flowers, the bench sketches, the gate's sketches that pass and the tests'
flower); positives are the gate's painted-text fixtures. For each group it prints the most confident word of two
and of three or more letters and digits that Tesseract reads in any of its renders, and how many renders the bars
(MIN_CONFIDENCE) would refuse. A good painting refused costs a rollout its whole reward: the negatives' refusals
should be 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
GATE_FIXTURES = ROOT / "watercolour" / "fixtures" / "gate"
TEXT_FIXTURES = ("text_block_letters", "text_score_in_strokes", "text_stroked_word", "text_word_under_flower")


def sketches() -> dict[str, dict[str, str]]:
    """Group -> name -> sketch, for the negatives and the positives."""
    from watercolour.policy.procedural import generate_sketch

    expected = json.loads((GATE_FIXTURES / "expected.json").read_text())
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    flower = re.search(r'def flower_sketch\(\) -> str:\n.*?return """(.*?)"""', conftest, re.S)
    groups: dict[str, dict[str, str]] = {
        "pool": {p.stem: p.read_text() for p in sorted((ROOT / "ground" / "seed_pool").glob("*.js"))},
        "procedural": {str(seed): generate_sketch(seed) for seed in range(24)},
        "bench": {p.stem: p.read_text() for p in sorted((ROOT / "bench" / "sketches").glob("*.js"))},
        "gate, passing": {
            p.stem: p.read_text()
            for p in sorted(GATE_FIXTURES.glob("*.js"))
            if expected.get(p.name, {}).get("passed") and p.stem not in TEXT_FIXTURES
        },
    }
    if flower:
        groups["gate, passing"]["tests' flower"] = flower.group(1)
    for name in TEXT_FIXTURES:
        groups[f"text: {name.removeprefix('text_')}"] = {name: (GATE_FIXTURES / f"{name}.js").read_text()}
    return groups


async def read_all(groups: dict[str, dict[str, str]], seeds: int) -> dict[str, list[list[tuple[str, float]]]]:
    """Group -> one list of (word, confidence) per render that produced a picture."""
    from renderers import BrowserPool
    from rewards.picture_rules import _words

    pool = BrowserPool(browsers=2, pages_per_browser=2, deadline_s=30.0)
    await pool.start()
    reads: dict[str, list[list[tuple[str, float]]]] = {group: [] for group in groups}
    slots = asyncio.Semaphore(4)

    async def one(group: str, source: str, seed: int) -> None:
        async with slots:
            result = await pool.render(source, seed=seed)
        if result.png is not None:
            reads[group].append(list(await asyncio.to_thread(_words, result.png)))

    try:
        jobs = [one(g, s, seed) for g, named in groups.items() for s in named.values() for seed in range(seeds)]
        await asyncio.gather(*jobs)
    finally:
        await pool.close()
    return reads


def table(reads: dict[str, list[list[tuple[str, float]]]]) -> str:
    from rewards.picture_rules import MIN_CONFIDENCE

    def length(word: str) -> int:
        return len(re.sub(r"[^0-9A-Za-z]", "", word))

    def best(render_reads: list[list[tuple[str, float]]], n: int) -> str:
        words = [(c, w) for words in render_reads for w, c in words if min(length(w), 3) == n]
        return f'"{max(words)[1]}" {max(words)[0]:.0f}' if words else "none"

    def refused(words: list[tuple[str, float]]) -> bool:
        return any(length(w) >= 2 and c >= MIN_CONFIDENCE[min(length(w), 3)] for w, c in words)

    bars = f"bars: two characters {MIN_CONFIDENCE[2]:.0f}, three or more {MIN_CONFIDENCE[3]:.0f}"
    lines = [f"{'group':28} {'renders':>7} {'best word, 2':>16} {'best word, 3+':>18} {'refused':>8}   ({bars})"]
    for group, render_reads in reads.items():
        count = sum(refused(words) for words in render_reads)
        lines.append(
            f"{group:28} {len(render_reads):>7} {best(render_reads, 2):>16} {best(render_reads, 3):>18} {count:>8}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.text_reader", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="render seeds per sketch (default 4)")
    args = parser.parse_args(argv)
    print(table(asyncio.run(read_all(sketches(), args.seeds))))


if __name__ == "__main__":
    main()
