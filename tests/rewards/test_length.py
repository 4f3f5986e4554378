"""The length ramp: 0 below 150 tokens, linear to 1 at 3000, flat to 6000, 0 beyond; tokens = characters / 4."""

from __future__ import annotations

import pytest

from rewards.length import length_reward, length_score


def sketch_of_tokens(tokens: float) -> str:
    return "x" * round(tokens * 4)


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (0, 0.0),
        (149, 0.0),
        (150, 0.0),
        (600, (600 - 150) / 2850),
        (1575, 0.5),
        (2999, 2849 / 2850),
        (3000, 1.0),
        (4500, 1.0),
        (6000, 1.0),
        (6000.25, 0.0),
        (6001, 0.0),
    ],
)
def test_length_ramp_boundaries(tokens: float, expected: float) -> None:
    assert length_score(sketch_of_tokens(tokens)) == pytest.approx(expected)


def test_length_ramp_rises_monotonically_between_floor_and_target() -> None:
    scores = [length_score(sketch_of_tokens(tokens)) for tokens in range(150, 3001, 50)]
    assert scores == sorted(scores)
    assert scores[0] == 0.0 and scores[-1] == 1.0


def test_no_sketch_scores_zero() -> None:
    assert length_score(None) == 0.0


def test_length_reward_measures_the_extracted_sketch_not_the_prose(flower_sketch: str) -> None:
    sketch = flower_sketch * 4  # ~ 900 tokens: inside the ramp
    plain = f"```javascript\n{sketch}\n```"
    chatty = "Here is my painting. " * 200 + plain + "\nI hope you like it!" * 100
    as_messages = [{"role": "assistant", "content": plain}]
    rewards = length_reward([plain, chatty, as_messages])
    assert rewards[0] == pytest.approx(length_score(sketch), abs=0.01)
    assert rewards[0] == rewards[1] == rewards[2]
    assert 0.0 < rewards[0] < 1.0  # type: ignore[operator]
