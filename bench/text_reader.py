"""`python -m bench.text_reader [--seeds N] [--per-subject K]`: how often the gate's picture checks refuse good paintings,
and how often they refuse painted writing.

Not a timing benchmark: it measures the false-refusal rate of `rewards.picture.rules` (a dark ground, text read in the
paint or found by its shape) and the margin of the text reader's bars. Good paintings hold no text and a pale ground: the seed pool, the
procedural painter's flowers of every subject (K full-style and K/2 compact ones a subject, from seed 100: the bars
were chosen on seeds 0-15, so these are paintings they have not seen), the bench sketches and the gate's sketches that
pass. Positives are the gate's painted-text fixtures, each rendered at N seeds. For each group it prints the most
confident word of three or more letters and digits in the first reading and in the others, and how many renders the
picture checks refuse; then the false-refusal rate over every good painting. A good painting refused costs a rollout
its whole reward: it should be at most 1%.

`--forged [SET]` renders instead a held-out set of forged-writing sketches (`watercolour/fixtures/writing/SET/`, by
default the newest, `held_out_N` with the highest N; written by `python -m bench.forged_writing`, each before the
check's last change it was read after) and prints, for each family, how many the picture checks refuse: each one should be.

`--latency N` times instead one picture's text check alone (`painted_text`: Tesseract's readings and the writing
detector, side by side), as a step's last painting is checked: N seed-pool pictures, each checked with a reader whose
Tesseract waits with its model loaded (the default) and with a new reader (a cold start), alternating, in one table
with the ratio of medians. The detector's model is loaded before the first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
GATE_FIXTURES = ROOT / "watercolour" / "fixtures" / "gate"
WRITING = ROOT / "watercolour" / "fixtures" / "writing"
HELD_OUT_SEED = 100


def sketches(per_subject: int, seeds: int) -> dict[str, list[tuple[str, int]]]:
    """Group -> (sketch, render seed) pairs: the good paintings' groups first, then one group per text fixture."""
    from ground.prompt import SUBJECTS
    from watercolour.policy.procedural import compact_sketch, generate_sketch

    expected = json.loads((GATE_FIXTURES / "expected.json").read_text())
    text = sorted(p for p in GATE_FIXTURES.glob("text_*.js") if not expected[p.name]["violations"] == ["text_drawing"])
    full = range(HELD_OUT_SEED, HELD_OUT_SEED + per_subject)
    compact = range(HELD_OUT_SEED, HELD_OUT_SEED + per_subject // 2)
    groups: dict[str, list[tuple[str, int]]] = {
        "pool": [(p.read_text(), 0) for p in sorted((ROOT / "ground" / "seed_pool").glob("*.js"))],
        "procedural, full": [(generate_sketch(seed, subject), 0) for subject in SUBJECTS for seed in full],
        "procedural, compact": [(compact_sketch(seed, subject), 0) for subject in SUBJECTS for seed in compact],
        "bench": [(p.read_text(), 0) for p in sorted((ROOT / "bench" / "sketches").glob("*.js"))],
        "gate, passing": [
            (p.read_text(), 0)
            for p in sorted(GATE_FIXTURES.glob("*.js"))
            if expected.get(p.name, {}).get("passed") and p not in text
        ],
    }
    for path in text:
        groups[f"text: {path.stem.removeprefix('text_')}"] = [(path.read_text(), seed) for seed in range(seeds)]
    return groups


Read = tuple[tuple[tuple[str, float, int], ...], list[str]]  # Tesseract's words, and the picture checks' refusals


async def read_all(groups: dict[str, list[tuple[str, int]]]) -> dict[str, list[Read]]:
    """Group -> one (words, refusals) per render that produced a picture."""
    from renderers import BrowserPool
    from rewards.picture.rules import READER, dark_ground, painted_text

    pool = BrowserPool(browsers=2, pages_per_browser=2, deadline_s=60.0)
    await pool.start()
    reads: dict[str, list[Read]] = {group: [] for group in groups}
    slots = asyncio.Semaphore(4)

    async def one(group: str, source: str, seed: int) -> None:
        async with slots:
            result = await pool.render(source, seed=seed)
        if result.png is not None:
            words = await asyncio.wrap_future(READER.words(result.png))
            reads[group].append((words, dark_ground(result.png) + await painted_text(result.png)))

    try:
        await asyncio.gather(*(one(group, s, seed) for group, pairs in groups.items() for s, seed in pairs))
    finally:
        await pool.close()
    return reads


def table(reads: dict[str, list[Read]]) -> str:
    from rewards.picture.rules import FIRST_READING_BAR, OTHER_READINGS_BAR

    def best(group: list[Read], first: bool) -> str:
        """The most confident word of three or more letters and digits, in the first reading or in the others."""
        words = [
            (c, w)
            for ws, _ in group
            for w, c, r in ws
            if (r == 0) == first and len(re.sub(r"[^0-9A-Za-z]", "", w)) >= 3
        ]
        return f'"{max(words)[1]}" {max(words)[0]:.0f}' if words else "none"

    bars = f"bars for a word of three or more: first reading {FIRST_READING_BAR:.0f}, others {OTHER_READINGS_BAR:.0f}"
    lines = [f"{'group':28} {'renders':>7} {'best, first':>16} {'best, others':>16} {'refused':>8}   ({bars})"]
    good = refused = 0
    for group, group_reads in reads.items():
        count = sum(bool(refusals) for _, refusals in group_reads)
        if not group.startswith("text:"):
            good, refused = good + len(group_reads), refused + count
        lines.append(
            f"{group:28} {len(group_reads):>7} {best(group_reads, True):>16} {best(group_reads, False):>16} {count:>8}"
        )
    rate = refused / good if good else 0.0
    lines.append(f"false refusals: {refused} of {good} good paintings ({rate:.2%})")
    return "\n".join(lines)


def held_out_sets() -> list[str]:
    """The held-out sets of forged writing, oldest first (`held_out`, `held_out_2`, ...)."""
    names = [path.name for path in WRITING.iterdir() if re.fullmatch(r"held_out(_\d+)?", path.name)]
    return sorted(names, key=lambda name: int(name.rpartition("_")[2]) if name[-1].isdigit() else 1)


def forged_groups(kind: str = "held_out") -> dict[str, list[tuple[str, int]]]:
    """Family -> the forged-writing sketches of one set, each rendered at seed 0."""
    folder = WRITING / kind
    expected = json.loads((folder / "expected.json").read_text())
    groups: dict[str, list[tuple[str, int]]] = {}
    for name, verdict in expected.items():
        groups.setdefault(f"forged: {verdict['family']}", []).append(((folder / name).read_text(), 0))
    return groups


def forged_table(reads: dict[str, list[Read]]) -> str:
    lines = [f"{'family':28} {'renders':>7} {'refused':>8}"]
    total = refused = 0
    for group, group_reads in reads.items():
        count = sum(bool(refusals) for _, refusals in group_reads)
        total, refused = total + len(group_reads), refused + count
        lines.append(f"{group.removeprefix('forged: '):28} {len(group_reads):>7} {count:>8}")
    lines.append(f"forged writing refused: {refused} of {total} ({refused / total:.1%})")
    return "\n".join(lines)


async def latency(pictures: int) -> str:
    """One picture's text check alone: with a spare Tesseract waiting, against a cold start; paired, alternating."""
    import statistics
    import time

    from ground.reference_pool import load_pool
    from rewards.picture import rules as picture_rules

    pngs = [reference.png for reference in load_pool()][:pictures]
    warm = picture_rules.TextReader()
    picture_rules.READER = warm
    await picture_rules.painted_text(pngs[-1])  # its first run is cold, and loads the detector; a spare waits after it
    times: dict[str, list[float]] = {"spare": [], "cold": []}
    for index, png in enumerate(pngs[: len(pngs) - 1]):
        for path in ("spare", "cold") if index % 2 == 0 else ("cold", "spare"):
            reader = warm if path == "spare" else picture_rules.TextReader()
            picture_rules.READER = reader
            started = time.perf_counter()
            await picture_rules.painted_text(png)
            times[path].append(time.perf_counter() - started)
            if reader is not warm:
                reader.close()
            await asyncio.sleep(0.3)  # the spare started after a run loads its model before the next picture
    warm.close()
    median = {path: statistics.median(values) for path, values in times.items()}
    lines = [f"{'reader':8} {'pictures':>8} {'median s':>9} {'p90 s':>7}"]
    for path, values in times.items():
        p90 = sorted(values)[int(0.9 * (len(values) - 1))]
        lines.append(f"{path:8} {len(values):>8} {median[path]:>9.3f} {p90:>7.3f}")
    lines.append(f"spare / cold (ratio of medians): {median['spare'] / median['cold']:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.text_reader", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="render seeds per text fixture (default 4)")
    parser.add_argument(
        "--per-subject", type=int, default=16, help="full-style procedural paintings a subject (default 16)"
    )
    parser.add_argument("--latency", type=int, metavar="N", help="time one picture read alone, N pictures instead")
    sets = held_out_sets()
    parser.add_argument(
        "--forged",
        nargs="?",
        const=sets[-1],
        choices=sets,
        help=f"a held-out set of forged writing instead, by family (default the newest, {sets[-1]})",
    )
    args = parser.parse_args(argv)
    if args.latency:
        print(asyncio.run(latency(args.latency + 1)))
        return
    if args.forged:
        print(forged_table(asyncio.run(read_all(forged_groups(args.forged)))))
        return
    print(table(asyncio.run(read_all(sketches(args.per_subject, args.seeds)))))


if __name__ == "__main__":
    main()
