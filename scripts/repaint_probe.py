"""How often the second painting of a repaint episode scores above the first, on fixed seeds (docs/repaint.md).

    PYTHONPATH=. python scripts/repaint_probe.py RUN_DIR/warmstart/adapter --episodes 8   # before training
    PYTHONPATH=. python scripts/repaint_probe.py RUN_DIR/adapter --episodes 8             # after a repaint run

Each episode samples turn 1, paints it through `PaintingEnv`, shows the policy the observation, samples turn 2 and
paints it; seeds are 0..episodes-1, so two adapters face the same draws. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapter", type=Path, help="A repaint policy's adapter folder (with its tokenizer).")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=600)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(probe(args.adapter, args.episodes, args.max_new_tokens))))


async def probe(adapter: Path, episodes: int, max_new_tokens: int) -> dict:
    import torch

    from rewards.scoring_engine import ScoringEngine
    from watercolour.adapter import load_policy
    from watercolour.config import load_config
    from watercolour.painting_env import PaintingEnv
    from watercolour.policy import set_cpu_threads
    from watercolour.prompt import messages
    from watercolour.tool_chat import use_tool_template

    set_cpu_threads()
    config = load_config("repaint", {"run_dir": tempfile.mkdtemp()})
    assert config.repaint is not None
    model, tokenizer = load_policy(adapter)
    tokenizer = use_tool_template(tokenizer)
    from trl.chat_template_utils import add_response_schema

    add_response_schema(tokenizer)
    engine = ScoringEngine(config, Path(config.run_dir))
    firsts, seconds, painted_twice = [], [], 0
    try:
        for seed in range(episodes):
            env = PaintingEnv(engine, config.repaint)
            chat = messages(config.training.subject, config.training.prompt)
            chat[-1] = {**chat[-1], "content": chat[-1]["content"] + env.reset(prompt=chat)}
            for _ in range(config.repaint.turns):
                prefix = tokenizer.apply_chat_template(
                    chat, tools=[env.paint], add_generation_prompt=True, tokenize=False
                )
                ids = tokenizer(prefix, return_tensors="pt", add_special_tokens=False)
                torch.manual_seed(seed * 100 + len(env.turns))
                out = model.generate(
                    **ids,
                    max_new_tokens=max_new_tokens,
                    do_sample=True,
                    top_k=config.training.top_k,
                    top_p=config.training.top_p,
                    temperature=config.training.temperature,
                )
                reply = tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=False)
                message = tokenizer.parse_response(reply, prefix=prefix)
                calls = [c for c in message.get("tool_calls") or [] if c["function"]["name"] == "paint"]
                if not calls:
                    break
                sketch = str(calls[0]["function"]["arguments"].get("sketch", ""))
                observation = await env.paint(sketch)
                chat += [message, {"role": "tool", "name": "paint", "content": str(observation)}]
            rewards = [turn.parts.reward for turn in env.turns]
            if len(rewards) == 2 and None not in rewards:
                painted_twice += 1
                firsts.append(rewards[0])
                seconds.append(rewards[1])
    finally:
        await engine.aclose()
    beats = sum(b > a for a, b in zip(firsts, seconds, strict=True))
    return {
        "adapter": str(adapter),
        "episodes": episodes,
        "painted_twice": painted_twice,
        "second_beats_first": beats,
        "rate": beats / painted_twice if painted_twice else None,
        "first_mean": sum(firsts) / len(firsts) if firsts else None,
        "second_mean": sum(seconds) / len(seconds) if seconds else None,
    }


if __name__ == "__main__":
    main()
