"""How often the second painting of a repaint episode scores above the first, on fixed seeds (docs/repaint.md).

    PYTHONPATH=. python lab/scripts/repaint_probe.py RUN_DIR/warmstart/adapter --episodes 8   # before training
    PYTHONPATH=. python lab/scripts/repaint_probe.py RUN_DIR/adapter --episodes 8             # after a repaint run

Each turn samples every episode's reply in one batch (sampling seed `--seed` plus the turn, so two adapters face
the same draws), paints each paint call through its own `PaintingEnv` (one prompt, so every episode faces the
same judge references, as a GRPO group does), shows the policy the observation, and samples the next turn.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapter", type=Path, help="A repaint policy's adapter folder (with its tokenizer).")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(probe(args.adapter, args.episodes, args.max_new_tokens, args.seed))))


async def probe(adapter: Path, episodes: int, max_new_tokens: int, seed: int) -> dict:
    from trl.chat_template_utils import add_response_schema

    from deployments.presets import load_config
    from episodes.painting_env import PaintingEnv
    from ground.prompt import messages
    from rewards.scoring.scoring_engine import ScoringEngine
    from watercolour.policy.adapter import load_policy
    from watercolour.policy.loading import set_cpu_threads
    from watercolour.policy.tool_chat import use_tool_template

    set_cpu_threads()
    config = load_config("repaint", {"run_dir": tempfile.mkdtemp()})
    assert config.repaint is not None
    model, tokenizer = load_policy(adapter)
    tokenizer = add_response_schema(use_tool_template(tokenizer))
    tokenizer.padding_side = "left"
    engine = ScoringEngine(config.scoring, Path(config.run_dir))
    envs = [PaintingEnv(engine, config.repaint) for _ in range(episodes)]
    chats = []
    for env in envs:
        chat = messages(config.training.subject, config.training.prompt)
        chat[-1] = {**chat[-1], "content": chat[-1]["content"] + env.reset(prompt=chat)}
        chats.append(chat)
    try:
        live = list(range(episodes))
        for turn in range(config.repaint.turns):
            replies = sample(
                model, tokenizer, [chats[i] for i in live], envs[0].paint, config, max_new_tokens, seed + turn
            )
            still = []
            for i, (prefix, reply) in zip(live, replies, strict=True):
                try:
                    message = tokenizer.parse_response(reply, prefix=prefix)
                except ValueError:  # a call whose JSON does not parse: no tool runs, as in training
                    continue
                calls = [c for c in message.get("tool_calls") or [] if c["function"]["name"] == "paint"]
                if not calls:
                    continue
                observation = await envs[i].paint(str(calls[0]["function"]["arguments"].get("sketch", "")))
                chats[i] += [message, {"role": "tool", "name": "paint", "content": str(observation)}]
                still.append(i)
            live = still
            if not live:
                break
    finally:
        await engine.aclose()
    firsts, seconds, painted_once, copies = [], [], 0, 0
    for env in envs:
        rewards = [turn.parts.reward for turn in env.turns]
        painted_once += bool(rewards)
        if len(rewards) == 2 and None not in rewards:
            firsts.append(rewards[0])
            seconds.append(rewards[1])
            copies += env.turns[0].sketch == env.turns[1].sketch
    beats = sum(b > a for a, b in zip(firsts, seconds, strict=True))
    return {
        "adapter": str(adapter),
        "episodes": episodes,
        "seed": seed,
        "painted_once": painted_once,
        "painted_twice": len(firsts),
        "second_beats_first": beats,
        "ties": sum(b == a for a, b in zip(firsts, seconds, strict=True)),
        "second_sketch_identical": copies,
        "rate": beats / len(firsts) if firsts else None,
        "first_mean": sum(firsts) / len(firsts) if firsts else None,
        "second_mean": sum(seconds) / len(seconds) if seconds else None,
    }


def sample(
    model: Any, tokenizer: Any, chats: list, tool: Any, config: Any, max_new_tokens: int, seed: int
) -> list[tuple[str, str]]:
    """One reply per chat, sampled in one batch with the training settings: (templated prompt, reply) pairs."""
    import torch

    prefixes = [
        tokenizer.apply_chat_template(chat, tools=[tool], add_generation_prompt=True, tokenize=False) for chat in chats
    ]
    batch = tokenizer(prefixes, return_tensors="pt", add_special_tokens=False, padding=True)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(
            **batch,
            max_new_tokens=max_new_tokens,
            do_sample=True,
            top_k=config.training.top_k,
            top_p=config.training.top_p,
            temperature=config.training.temperature,
            pad_token_id=tokenizer.pad_token_id,
        )
    width = batch["input_ids"].shape[1]
    pairs = []
    for prefix, row in zip(prefixes, out, strict=True):
        ids = row[width:].tolist()
        if tokenizer.eos_token_id in ids:  # what follows the end of the reply is padding
            ids = ids[: ids.index(tokenizer.eos_token_id) + 1]
        pairs.append((prefix, tokenizer.decode(ids, skip_special_tokens=False)))
    return pairs


if __name__ == "__main__":
    main()
