"""The length term: a ramp that rewards elaborate sketches and stops paying for runaway ones.

Tokens are estimated as characters / 4 of the extracted sketch, not of the whole completion, so prose around
the code earns nothing. The ramp is 0 below 150 tokens, rises linearly to 1 at 3000, stays at 1 up to 6000
and drops to 0 above it.

Why these numbers: a flat band (1 for 150-1200 tokens) held every measured policy output inside it, so it
gave GRPO no within-group variance; 3000 is where strong hand-crafted watercolour sketches land, and 6000
caps the 13,000-token runaways seen early in training.

Known pull towards padding: the pool's hand-written sketches run about 200-315 tokens (L = 0.02-0.06), so
this term asks for far more code than the paintings we like actually need, and filler (repeated shapes,
comments inside the sketch) is farmable up to the length weight (0.05 in every preset). Keep that weight
small; the judge and the aesthetic scorer are what should decide.
"""

from __future__ import annotations

from typing import Any

from ground.sketch import extract_sketch
from rewards.term import RewardTerm


CHARS_PER_TOKEN = 4
MIN_TOKENS = 150
TARGET_TOKENS = 3000
RUNAWAY_TOKENS = 6000


def estimate_tokens(source: str) -> float:
    """A tokenizer-free estimate, so the term is the same whichever policy wrote the sketch."""
    return len(source) / CHARS_PER_TOKEN


def length_score(source: str | None) -> float:
    """L in 0..1 for an extracted sketch; no sketch scores 0."""
    if source is None:
        return 0.0
    tokens = estimate_tokens(source)
    if tokens < MIN_TOKENS or tokens > RUNAWAY_TOKENS:
        return 0.0
    if tokens >= TARGET_TOKENS:
        return 1.0
    return (tokens - MIN_TOKENS) / (TARGET_TOKENS - MIN_TOKENS)


def completion_text(completion: str | list[dict[str, Any]]) -> str:
    """TRL hands plain-text completions as strings and conversational ones as message lists: the reply is the
    last assistant message."""
    if isinstance(completion, str):
        return completion
    return next(message["content"] for message in reversed(completion) if message["role"] == "assistant")


def length_reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
    """TRL's reward contract, for runs or evaluations that want the length term on its own."""
    return [length_score(extract_sketch(completion_text(completion))) for completion in completions]


TERM: RewardTerm[Any] = RewardTerm(
    name="length",
    measures="the length ramp L of the extracted sketch in 0..1: 0 below 150 tokens, rising to 1 at 3,000, 0 above "
    "6,000 (a compact sketch of a few hundred tokens scores a few hundredths)",
    of_verdict=lambda verdict: length_score(verdict.sketch),
)
