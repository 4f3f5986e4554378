"""The painting environment through the real scoring engine and Chromium: turns, observations, episode reward."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from deployments.presets import load_config
from episodes.painting_env import EpisodeFactory, PaintingEnv, episode_reward
from ground.run_config import RepaintSettings
from rewards.scoring.dead_letters import DeadLetterLog
from rewards.scoring.scoring_engine import ScoringEngine


pytestmark = pytest.mark.browser

OUTSIDE_ALLOWLIST = """
async function setup() { createCanvas(600, 600, WEBGL); brush.scaleBrushes(3); noLoop(); }
function draw() { translate(-width / 2, -height / 2); background("#f6f0e4"); brush.set("marker"); brush.circle(300, 300, 90, 0.2); }
"""
THROWS = """
async function setup() { createCanvas(600, 600, WEBGL); brush.scaleBrushes(3); noLoop(); }
function draw() { translate(-width / 2, -height / 2); background("#f6f0e4"); brush.fill("#c03050", 200); brush.circle(300, 300, 90, 0.2); let petals = null; petals.grow(); }
"""


def engine(tmp_path: Path, pool, **overrides) -> ScoringEngine:
    return ScoringEngine(
        load_config("offline", {"run_dir": str(tmp_path), **overrides}).scoring, tmp_path, browsers=pool
    )


def test_only_paint_is_a_tool_and_it_is_documented_for_the_chat_template() -> None:
    from transformers.utils import get_json_schema

    tools = [
        name
        for name, _ in inspect.getmembers(PaintingEnv, predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    ]
    assert tools == ["paint"]
    schema = get_json_schema(PaintingEnv.paint)
    assert schema["function"]["parameters"]["properties"]["sketch"]["type"] == "string"
    assert "p5.brush" in schema["function"]["parameters"]["properties"]["sketch"]["description"]


async def test_two_paintings_are_observed_and_the_episode_ends_after_the_configured_turns(
    tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    env = EpisodeFactory(engine(tmp_path, browser_pool), RepaintSettings(turns=2))()
    intro = env.reset(prompt=[{"role": "user", "content": "Paint a poppy."}], subject="a poppy")
    assert "paint tool" in intro and "2 times" in intro

    first = await env.paint(OUTSIDE_ALLOWLIST)
    assert isinstance(first, str)
    assert "Painting 1 of 2" in first and "refused" in first
    assert "brush.set" in first and "do not exist" in first  # which method is outside the allowlist

    second = await env.paint(flower_sketch)
    assert isinstance(second, str)
    assert "Painting 2 of 2" in second and "passed" in second
    assert "Paint covers" in second and "centred at (" in second and "Main colours: #" in second
    assert "Judge (offline" in second  # the offline judge is named as such
    # and its reason, from the features it compares, names itself as offline
    assert "(yours was image A): offline judge: " in second
    assert "last painting" in second

    assert "No paintings left" in await env.paint(flower_sketch)
    turns = env.turns
    assert len(turns) == 2 and turns[0].parts.reward == 0.0
    assert env.reward == turns[1].parts.reward and env.reward is not None and env.reward > 0

    # A pooled instance starts its next episode empty.
    env.reset(prompt="again")
    assert env.turns == [] and env.reward == 0.0


async def test_a_call_that_throws_is_named_in_the_observation(tmp_path: Path, browser_pool) -> None:
    env = EpisodeFactory(engine(tmp_path, browser_pool), RepaintSettings())()
    env.reset(prompt="p")
    text = await env.paint(THROWS)
    assert isinstance(text, str)
    assert "a call threw an error while painting" in text and "grow" in text


async def test_a_dead_scorer_on_any_turn_makes_the_episode_none_with_a_dead_letter(
    tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    # An aesthetic scorer nobody listens on: the refused first painting asks no service, the second cannot be measured.
    dead = engine(
        tmp_path,
        browser_pool,
        **{
            "aesthetic.backend": "hpsv3",
            "aesthetic.url": "http://127.0.0.1:9",
            "aesthetic.attempts": 1,
            "aesthetic.backoff_s": 0,
        },
    )
    env = PaintingEnv(dead, RepaintSettings(turns=2))
    env.reset(prompt="p")
    await env.paint(OUTSIDE_ALLOWLIST)  # refused by the gate: no service is asked
    text = await env.paint(flower_sketch)
    assert isinstance(text, str) and "could not be scored (our failure" in text
    assert env.reward is None
    assert [letter.stage for letter in DeadLetterLog(tmp_path).read()] == ["aesthetic"]


def test_the_episode_reward_is_the_final_painting_or_final_plus_weighted_improvement() -> None:
    assert episode_reward([0.2, 0.5], RepaintSettings()) == 0.5
    assert episode_reward([0.2, 0.5], RepaintSettings(reward="improvement", improvement_weight=0.5)) == 0.5 + 0.15
    assert episode_reward([0.6, 0.4], RepaintSettings(reward="improvement", improvement_weight=1.0)) == pytest.approx(
        0.2
    )
    assert episode_reward([0.3, None], RepaintSettings()) is None
    assert episode_reward([], RepaintSettings()) == 0.0


async def test_calls_of_one_reply_run_at_once_and_still_keep_to_the_turn_limit(
    tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    import asyncio

    env = PaintingEnv(engine(tmp_path, browser_pool), RepaintSettings(turns=2))
    env.reset(prompt="p")
    answers = await asyncio.gather(*(env.paint(flower_sketch) for _ in range(3)))
    assert sum("No paintings left" in answer for answer in answers) == 1
    assert [turn.observation.turn for turn in env.turns] == [1, 2]


async def test_a_vision_policy_gets_the_rendered_picture_as_an_image_block(
    tmp_path: Path, browser_pool, flower_sketch: str
) -> None:
    env = PaintingEnv(engine(tmp_path, browser_pool), RepaintSettings(vision=True))
    env.reset(prompt="p")
    image, text = await env.paint(flower_sketch)
    assert isinstance(image, dict) and isinstance(text, dict)
    assert image["type"] == "image" and image["image"].size == (600, 600)
    assert text["type"] == "text" and text["text"].startswith("Painting 1 of 2.")
