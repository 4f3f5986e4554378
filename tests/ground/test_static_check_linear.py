"""The static check's work grows with the source, not with its square, whatever the nesting; and the gate runs it off
the event loop. Work is counted, not timed (the machine is shared): the lines the check executes in `ground/` plus
the characters of source text it reads back, at two sizes. Times are the benchmark's (`python -m bench.static_check`).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest

import ground
from bench.static_check import SHAPES
from ground import js_scope, sketch, sketch_names, sketch_rules
from ground.settings import GateSettings
from ground.sketch import inventory
from rewards.gate import checked


GROUND = str(Path(ground.__file__).parent)
# The shapes whose work was quadratic in Python (a subtree or an ancestor chain read per node, a whole expression's
# text read per node). The template, control-character and HTML-comment shapes were quadratic inside C calls,
# which this counter does not see: the benchmark measures those.
COUNTED = [
    "nested indexes a[a[...]]",
    "nested string indexes a['x'+a[...]]",
    "member chain a.b.b...",
    "call chain f()()...",
    "nested new (new (...))",
    "and chain f() && ...",
    "computed destructuring",
]


def work(source: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Lines executed in `ground/` and characters of source read back as text, while taking `source`'s inventory."""
    lines = texts = 0

    def local(frame, event, arg):
        nonlocal lines
        lines += event == "line"
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(GROUND) else None

    original = js_scope.node_text

    def counting(node):
        nonlocal texts
        text = original(node)
        texts += len(text)
        return text

    with monkeypatch.context() as patch:
        for module in (js_scope, sketch, sketch_rules, sketch_names):
            if "node_text" in vars(module):
                patch.setattr(module, "node_text", counting)
        sys.settrace(tracer)
        try:
            inventory(source)
        finally:
            sys.settrace(None)
    return lines + texts


@pytest.mark.parametrize("shape", COUNTED)
def test_the_static_check_s_work_doubles_when_the_nesting_doubles(shape, monkeypatch):
    # Before, each of these took about four times the work at twice the size (`a[a[...]]`: 28 s at a few kB).
    small, large = (work(SHAPES[shape](size), monkeypatch) for size in (2_000, 4_000))
    assert large / small < 2.3, (shape, small, large)


def test_every_shape_still_gets_its_verdict_at_the_limit():
    # Linear and still right: long shapes are read to the end and get their verdicts.
    found = inventory(SHAPES["nested string indexes a['x'+a[...]]"](12_000))
    assert found.computed_access and all(r.endswith(": a key built from strings") for r in found.computed_access)
    found = inventory(SHAPES["member chain a.b.b..."](12_000))
    assert found.defines_setup and found.webgl and not found.unlisted_names
    found = inventory(SHAPES["and chain f() && ..."](12_000))
    assert found.unlisted_names == ["f: not one of the names the prompt permits"]


async def test_the_gate_reads_a_sketch_off_the_event_loop():
    # A long sketch's check runs in a worker thread: the loop that renders and scores goes on meanwhile.
    seen: list[str] = []
    original = sketch.inventory

    def recording(source, allowlist):
        seen.append(threading.current_thread().name)
        return original(source, allowlist)

    ticks = 0

    async def ticking():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticker = asyncio.ensure_future(ticking())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("rewards.gate.inventory", recording)
        verdict = await checked(SHAPES["nested calls f(f(...))"](8_000), GateSettings())
    ticker.cancel()
    assert seen and seen[0] != threading.main_thread().name
    assert ticks > 1 and "name_outside_allowlist" in verdict.violations
