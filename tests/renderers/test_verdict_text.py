"""Verdicts are data the harness wrote: every string a sketch wrote or provoked is valid UTF-8, token-free, capped."""

from __future__ import annotations

import json

from ground.records import GateVerdict, RenderResult, RewardParts
from renderers.watch import MAX_TEXT, scrubbed
from rewards.gate import MAX_REASON_CHARS, static_check


def test_scrubbing_drops_the_render_token_whole_or_cut_and_replaces_lone_surrogates():
    token = "/r/" + "0123456789abcdef" * 2 + "/"
    text = f"at http://watercolour.invalid{token}probe.js:3 and {token[:20]} \ud800 \udfff"
    assert scrubbed(text) == "at http://watercolour.invalid/probe.js:3 and / \ufffd \ufffd"
    assert len(scrubbed("x" * 10_000)) == MAX_TEXT


def test_a_render_with_lone_surrogates_in_every_sketch_string_serialises():
    render = RenderResult(ok=False, errors=["uncaught: \ud800"], blocked_requests=["\udc00"], fault_detail="\udbff")
    verdict = GateVerdict(
        passed=False, violations=["runtime_error"], details={"runtime_error": ["\ud800"]}, render=render
    )
    record = json.loads(RewardParts(reward=0.0, verdict=verdict).model_dump_json())
    assert record["verdict"]["render"]["errors"] == ["uncaught: \ufffd"]
    assert record["verdict"]["details"] == {"runtime_error": ["\ufffd"]}


def test_a_static_verdict_of_a_sketch_with_lone_surrogates_is_refused_and_serialises():
    sketch = 'function setup() { createCanvas(600, 600, WEBGL); brush.circle(1, 1, 1, 0); const s = "\ud800"; }'
    verdict = static_check(sketch)
    assert "ambiguous_source" in verdict.violations
    assert "\ud800" not in RewardParts(reward=0.0, verdict=verdict).model_dump_json()


def test_a_verdict_reason_is_capped_however_long_the_name_it_quotes():
    name = "v" * 30_000
    verdict = static_check(f"function setup() {{ createCanvas(600, 600, WEBGL); brush.circle(1, 1, 1, 0); {name}; }}")
    assert max(len(reason) for reasons in verdict.details.values() for reason in reasons) <= MAX_REASON_CHARS
