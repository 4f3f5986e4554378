"""The browser-free reward used where no Chromium exists (the GPU proof): static gate, then the length ramp."""

from __future__ import annotations

import asyncio
import pickle

from deployments.presets import load_config
from ground.reference_pool import load_pool
from rewards.length import length_score
from rewards.scoring.static import StaticReward


def test_static_reward_pays_gate_and_length_and_refuses_cheats(tmp_path):
    seen = []
    reward = StaticReward(load_config("offline").scoring, tmp_path, on_scored=lambda *args: seen.append(args))
    sketch = load_pool()[0].sketch
    cheat = sketch.replace("brush.circle(", "ellipse(")
    rewards = asyncio.run(reward([["prompt"]] * 3, [f"```js\n{sketch}\n```", cheat, "I cannot paint."]))
    parts = seen[0][2]
    assert parts[0].verdict.passed
    assert rewards[0] == 0.5 + 0.5 * length_score(parts[0].verdict.sketch)
    assert rewards[1:] == [0.0, 0.0]
    assert "bare_primitives" in parts[1].verdict.violations
    assert parts[0].term("aesthetic") is None and parts[0].term("judge") is None


def test_static_reward_pickles(tmp_path):
    reward = pickle.loads(pickle.dumps(StaticReward(load_config("offline").scoring, tmp_path)))
    assert asyncio.run(reward([["p"]], ["no sketch here"])) == [0.0]
