"""Verdicts are data the harness wrote: every string a sketch wrote or provoked is valid UTF-8, token-free, capped
in bytes, and the whole verdict stays under 16 kB whatever the characters."""

from __future__ import annotations

import argparse
import json
import random

from ground.records import GateVerdict, RenderResult, RewardParts
from renderers.watch import MAX_TEXT, TOKEN, json_bytes, kept, scrubbed
from rewards.gate import MAX_REASON_BYTES, VERDICT_BYTES, capped, static_check
from watercolour.commands.gate import gate_one


def test_scrubbing_drops_the_render_token_whole_or_cut_and_replaces_lone_surrogates():
    token = "/r/" + "0123456789abcdef" * 2 + "/"
    text = f"at http://watercolour.invalid{token}probe.js:3 and {token[:20]} \ud800 \udfff"
    assert scrubbed(text) == "at http://watercolour.invalid/probe.js:3 and / \ufffd \ufffd"
    assert json_bytes(scrubbed("x" * 10_000)) <= MAX_TEXT and scrubbed("x" * 10_000).endswith(" [cut]")


DIGITS = "0123456789abcdef" * 2
REAL = f"/r/{DIGITS}/"


def test_removing_a_decoy_does_not_rebuild_the_token_behind_it():
    # Scrubbed once, `/r/0/` became `/` and joined what follows into the whole path again.
    for decoy in (f"/r/0{REAL}", f"/r/0/r/{DIGITS}/", f"/{REAL}r/{DIGITS}/", f"/r/a{REAL}r/{DIGITS}/x"):
        out = scrubbed(decoy)
        assert not TOKEN.search(out), (decoy, out)
        assert DIGITS not in scrubbed(decoy, token=REAL), decoy


def test_no_random_string_of_decoys_keeps_a_token_and_scrubbing_is_a_fixed_point():
    # A seeded property test (hypothesis is not among the dev extras): strings built of the pieces a sketch can
    # write around its own token, read from its stack, plus non-ASCII, astral and control characters.
    pieces = [
        "/",
        "r",
        "/r/",
        "r/",
        "0",
        "a",
        "f",
        DIGITS,
        DIGITS[:7],
        DIGITS[9:],
        REAL,
        "é",
        "\U0001f338",
        "\x01",
        " ",
    ]
    rng = random.Random(62)
    for _ in range(3_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        out = scrubbed(text, token=REAL)
        assert not TOKEN.search(out) and DIGITS not in out, text
        assert json_bytes(out) <= MAX_TEXT
        assert scrubbed(out, token=REAL) == out, text


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


def test_a_verdict_reason_is_capped_in_bytes_however_long_the_name_it_quotes():
    for name in ("v" * 30_000, "\U0001d4e5" * 8_000, "é" * 20_000):
        verdict = static_check(
            f"function setup() {{ createCanvas(600, 600, WEBGL); brush.circle(1, 1, 1, 0); {name}; }}"
        )
        reasons = [reason for reasons in verdict.details.values() for reason in reasons]
        assert max(json_bytes(reason) for reason in reasons) <= MAX_REASON_BYTES, name[:3]


def test_the_whole_verdict_stays_under_16_kb_whatever_the_characters_and_says_it_was_cut():
    # Every code full of the costliest characters, and a render with every list full: the store's record and the
    # verdict's summary (escaped to ASCII: an astral character is 12 bytes) both stay under the cap.
    rng = random.Random(4)
    alphabet = ["\U0001f338", "\x01", "é", '"', "x", "\ud800"]
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3_000))) for _ in range(60)]
    codes = [f"code_{index:02d}_long_enough_name" for index in range(28)]
    details = capped({code: words[index % 7 :] for index, code in enumerate(codes)})
    render = RenderResult(
        ok=False,
        errors=kept([scrubbed(word) for word in words]),
        blocked_requests=kept([scrubbed(word, 200) for word in words]),
        fault_detail=scrubbed(words[0]),
        coverage=0.123456789,
    )
    verdict = GateVerdict(passed=False, violations=list(details), details=details, render=render, counts={"shapes": 9})
    record = RewardParts(reward=0.0, verdict=verdict).model_dump_json(exclude={"verdict": {"render": {"png"}}})
    summary = json.dumps(verdict.summary())
    assert max(len(record.encode()), len(summary)) <= VERDICT_BYTES, (len(record.encode()), len(summary))
    assert all(reasons[-1].endswith("cut to keep the verdict under 16 kB") for reasons in details.values())
    assert render.errors[-1].endswith("cut to keep the verdict under 16 kB")


async def test_the_gate_command_s_json_line_of_a_sketch_full_of_astral_names_stays_under_16_kb(tmp_path):
    # Refused names of astral characters: 20 reasons of 500 characters made a 115 kB line.
    names = "; ".join("\U0001d4e5" * 400 + str(index) for index in range(30))
    path = tmp_path / "astral.js"
    path.write_text(f"function setup() {{ createCanvas(600, 600, WEBGL); ellipse(1, 2, 3); {names}; }}")
    line = await gate_one(None, path, argparse.Namespace(seed=0))
    assert not line["passed"] and "name_outside_allowlist" in line["violations"]
    assert len(json.dumps(line)) <= VERDICT_BYTES
