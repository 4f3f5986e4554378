"""Repaint episodes' paintings rendered together: each turn's paint calls start rendering as soon as it is generated.

TRL (1.16) runs the tool calls of a generated turn episode by episode: it awaits one episode's `paint` before it starts
the next, so a step of G episodes waits for G renders one after another at every turn (on the GPU machine, a repaint
step of 8 two-painting episodes spent most of its 177 s generating and painting; docs/repaint.md). Here, when a repaint
turn has been generated, every row's reply is parsed the way TRL parses it, and each `paint` call's sketch is handed to
the scoring engine's `prefetch` on TRL's event loop, all at once, with its episode's group seed, so the engine answers
the service terms (the aesthetic scorer, the judge against its references) too. When TRL then calls the episodes'
`paint` one by one, each finds its render and answers in the content cache or joins them in flight
(`rewards.scoring.cache.CachedRenderer`, the engine's calls in flight), so the renders and remote calls of a turn
overlap. Nothing else changes: `paint` still gates, scores and records the painting, and a prefetch records nothing (a
render that failed is met again, with its retries, by `paint`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from watercolour.policy.early_scoring import retrieve_failure


TOOL = "paint"


def episode_seeds(
    prompt_ids: Sequence[list[int]],
    batch_prompt_ids: Sequence[list[int]],
    batch_prompts: Sequence[Any],
    step: int | None,
) -> list[int | None]:
    """Each generated row's group seed, drawn as its episode's `PaintingEnv.reset` draws it (prompt and step).

    A turn's rows are the batch's episodes, or after a tool result some of them, each row continuing its episode's
    tokenized prompt; the row's prompt is the longest of the batch's that it starts with (a group's episodes share
    one prompt, so which of them does not matter). None for a row that continues none.
    """
    from rewards.scoring.composite import group_seed

    seeds: list[int | None] = []
    for ids in prompt_ids:
        found = [row for row, prompt in enumerate(batch_prompt_ids) if ids[: len(prompt)] == prompt]
        best = max(found, key=lambda row: len(batch_prompt_ids[row]), default=None)
        seeds.append(None if best is None else group_seed(batch_prompts[best], step))
    return seeds


def paint_calls(reply: dict[str, Any]) -> list[str]:
    """The sketches of the `paint` calls in one parsed reply (TRL's `parse_response` output); [] when none."""
    sketches = []
    for call in reply.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if function.get("name") == TOOL and isinstance(arguments, dict) and isinstance(arguments.get("sketch"), str):
            sketches.append(arguments["sketch"])
    return sketches


def render_ahead(
    trainer: Any,
    prefetch: Callable[..., Coroutine[Any, Any, None]],
    prompt_ids: Sequence[list[int]],
    completion_ids: Sequence[list[int]],
    seeds: Sequence[int | None],
) -> list[Any]:
    """Start every `paint` call of a generated turn; returns the prefetches' futures (tests read them).

    `prompt_ids[i]` is what row i was generated from (TRL's parser reads the reply against it) and `seeds[i]` its
    episode's group seed (None: unknown, render only); a reply TRL could not parse as a tool call starts nothing, as
    it would call nothing.
    """
    from trl.chat_template_utils import parse_response

    futures = []
    for prefix, ids, seed in zip(prompt_ids, completion_ids, seeds, strict=True):
        if not ids:
            continue
        for sketch in paint_calls(parse_response(trainer._tokenizer, ids, prefix=prefix)):
            work = prefetch(sketch) if seed is None else prefetch(sketch, seed=seed)
            future = asyncio.run_coroutine_threadsafe(work, trainer.async_loop)
            future.add_done_callback(retrieve_failure)
            futures.append(future)
    return futures
