"""The repaint warm start's episodes: paint, read the real observation, paint again what it points at, stop.

A warm start that teaches one paint call per answer gives a policy that paints once and stops (docs/repaint.md:
0 of 4 episodes painted twice), and after the observation it had never been taught to read it wrote a made-up
`<tool_response>` or repeated its first sketch. GRPO can only reward second paintings the policy sometimes makes,
so each row here is a whole episode, played through the real `PaintingEnv` (gate, Chromium, the run's scorers):

    paint(first sketch) -> observation -> paint(a revised sketch) -> observation -> "Done."

The revision changes what the observation points at (`revision`): larger petals when the paint covers little of
the sheet (the offline scorers' strongest term, and the judge's most frequent reason), the palette's deep wash
when coverage is already fair. Both are `procedural.compact_sketch` of the same seed with one thing changed, so
the pair teaches the change, not a new flower. The observations are the environment's own text of the rendered
pictures, so the policy learns to read exactly what GRPO will show it.
"""

from __future__ import annotations

import json
from typing import Any

from episodes.observation import PictureFacts
from episodes.painting_env import PaintingEnv
from ground.prompt import PromptStyle, messages
from ground.run_config import RepaintSettings
from rewards.scoring.scoring_engine import ScoringEngine
from watercolour.policy.procedural import compact_sketch, plan_flower


# Below this share of the canvas the revision grows the petals. Compact sketches cover 4-15% (procedural.py); the
# offline scorer's coverage term keeps rising well past that, so nearly every first painting is told to grow.
COVERAGE_TARGET = 0.2
# How much longer the revised petals are, in canvas units (the drawn reach is 120-250).
GROWTH = 80
# The reply after the last observation. TRL generates once more after it; a policy never taught what to say there
# wrote up to the whole token budget of text nobody acts on.
LAST_REPLY = "Done."


def revision(facts: PictureFacts | None) -> dict[str, Any]:
    """What the next sketch changes, from the measured facts of the last picture (`compact_sketch` arguments)."""
    if facts is None or facts.coverage < COVERAGE_TARGET:
        return {"grow": GROWTH}
    return {"deep": True}


def call(sketch: str) -> dict[str, Any]:
    """An assistant message calling `paint` with the sketch, as TRL's tool loop sees a parsed reply."""
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "paint", "arguments": {"sketch": sketch}}}],
    }


async def play(env: PaintingEnv, seed: int, subject: str, turns: int) -> list[dict[str, Any]]:
    """One taught episode as chat messages: each painting's call and observation, then the last reply."""
    chat: list[dict[str, Any]] = []
    grow, deep = 0, False
    for _ in range(turns):
        sketch = compact_sketch(seed, subject, grow=grow, deep=deep)
        observation = await env.paint(sketch)
        chat += [call(sketch), {"role": "tool", "name": "paint", "content": str(observation)}]
        change = revision(env.turns[-1].observation.facts)
        if "deep" in change and compact_sketch(seed, subject, grow=grow, deep=True) == sketch:
            change = {"grow": GROWTH}  # a white flower, or one already in the deep wash: grow it instead
        grow, deep = grow + change.get("grow", 0), deep or change.get("deep", False)
    return [*chat, {"role": "assistant", "content": LAST_REPLY}]


async def episode_rows(
    engine: ScoringEngine,
    settings: RepaintSettings,
    count: int,
    subject: str,
    seed: int = 0,
    prompt: PromptStyle = "full",
) -> list[dict[str, Any]]:
    """`count` SFT rows (prompt, completion, tools), each a whole episode of `settings.turns` paintings.

    Half the rows paint the run's subject, the other half a seeded subject of the prompt's list, as the single-turn
    warm start's rows do (`warmstart.build_examples`)."""
    from transformers.utils import get_json_schema

    tools = json.dumps([get_json_schema(PaintingEnv.paint)])
    rows = []
    for index in range(count):
        sketch_seed = seed * 100_000 + index
        topic = subject if index % 2 == 0 else plan_flower(sketch_seed).subject
        chat = messages(topic, prompt)
        env = PaintingEnv(engine, settings)
        chat[-1] = {**chat[-1], "content": chat[-1]["content"] + env.reset(prompt=chat)}
        completion = await play(env, sketch_seed, topic, settings.turns)
        rows.append({"prompt": chat, "completion": completion, "tools": tools})
    return rows
