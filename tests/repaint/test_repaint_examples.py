"""The repaint warm start's taught episodes: two paint calls with the real observation between, then a short reply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deployments.presets import load_config
from episodes.observation import PictureFacts
from ground.palettes import PALETTES
from ground.run_config import RepaintSettings
from rewards.gate import static_check
from rewards.scoring.scoring_engine import ScoringEngine
from watercolour.policy.procedural import COMPACT_REACH_LIMIT, compact_sketch
from watercolour.training.repaint_examples import COVERAGE_TARGET, GROWTH, LAST_REPLY, episode_rows, revision


def facts(coverage: float) -> PictureFacts:
    return PictureFacts(
        coverage=coverage, centre=(300, 300), extent=(100, 100, 500, 500), palette=[], softness=0.9, tonal_range=0.2
    )


def test_the_revision_grows_the_petals_when_little_paint_covers_the_sheet_else_deepens_the_wash() -> None:
    assert revision(facts(COVERAGE_TARGET / 2)) == {"grow": GROWTH}
    assert revision(None) == {"grow": GROWTH}  # nothing was measured: paint more
    assert revision(facts(COVERAGE_TARGET + 0.1)) == {"deep": True}


def test_a_revised_compact_sketch_changes_only_the_reach_or_the_wash() -> None:
    first = compact_sketch(3, "a peach hibiscus")
    grown = compact_sketch(3, "a peach hibiscus", grow=GROWTH)
    deep = compact_sketch(3, "a peach hibiscus", deep=True)
    changed = [(a, b) for a, b in zip(first.splitlines(), grown.splitlines(), strict=True) if a != b]
    assert changed and all("brush.vertex(300 +" in b for _, b in changed)  # only the petals' vertices
    assert f'brush.fill("{PALETTES["peach"][2]}"' in deep
    assert len(deep.splitlines()) == len(first.splitlines())
    assert f"300 + {COMPACT_REACH_LIMIT} * cos" in compact_sketch(3, "a peach hibiscus", grow=1000)
    for sketch in (grown, deep):
        assert static_check(sketch).passed


@pytest.mark.browser
async def test_taught_episodes_call_paint_twice_with_the_real_observation_between(tmp_path: Path, browser_pool):
    config = load_config("repaint", {"run_dir": str(tmp_path)})
    engine = ScoringEngine(config.scoring, tmp_path, browsers=browser_pool)
    rows = await episode_rows(engine, RepaintSettings(turns=2), 2, "a peach hibiscus", seed=0, prompt="short")

    assert len(rows) == 2
    for row in rows:
        assert "paint tool" in row["prompt"][-1]["content"]  # what `reset` appends
        assert json.loads(row["tools"])[0]["function"]["name"] == "paint"
        roles = [message["role"] for message in row["completion"]]
        assert roles == ["assistant", "tool", "assistant", "tool", "assistant"]
        first, observed, second, last_seen, reply = row["completion"]
        sketches = [m["tool_calls"][0]["function"]["arguments"]["sketch"] for m in (first, second)]
        assert sketches[0] != sketches[1]
        # The observations are the environment's own words on the rendered pictures.
        assert observed["content"].startswith("Painting 1 of 2.") and "Paint covers" in observed["content"]
        assert "Call paint again" in observed["content"]
        assert last_seen["content"].startswith("Painting 2 of 2.") and "last painting" in last_seen["content"]
        assert reply == {"role": "assistant", "content": LAST_REPLY}


def test_only_the_policys_turns_are_taught_not_the_observations() -> None:
    from transformers import AutoTokenizer
    from trl.chat_template_utils import get_training_chat_template

    from watercolour.policy.loading import resolve_model
    from watercolour.policy.tool_chat import use_tool_template
    from watercolour.training.repaint_examples import call

    tokenizer = use_tool_template(AutoTokenizer.from_pretrained(resolve_model("smollm2-135m-instruct")))
    chat = [
        {"role": "user", "content": "Paint a poppy."},
        call("function setup() {}"),
        {"role": "tool", "name": "paint", "content": "Painting 1 of 2. OBSERVED"},
        call("function setup() { noLoop(); }"),
        {"role": "assistant", "content": LAST_REPLY},
    ]
    out = tokenizer.apply_chat_template(
        chat,
        chat_template=get_training_chat_template(tokenizer),
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    taught = tokenizer.decode([t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m])
    assert taught.count("<tool_call>") == 2 and LAST_REPLY in taught
    assert "OBSERVED" not in taught and "Paint a poppy" not in taught
