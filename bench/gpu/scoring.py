"""Real scoring in a GPU benchmark step: what renders cost a step, with and without early scoring.

A random policy writes token soup that the gate refuses at once, and it never ends a completion by itself, so
both the scoring cost and the spread of completion lengths would be missing. This cell puts them back:

- `ForcedLengths` ends row i at a drawn length: uniformly between half the budget and the whole budget (a policy
  under the length ramp writes close to its budget, and finishes at different times), or from the recipe's own
  length distribution (`recipe_lengths`); the same draw for each early step and the step after it
  (`paired_seed`);
- `PoolSketchReward` is the composite reward of the `offline` preset (gate, real Chromium renders, offline
  aesthetic and judge) scoring, for each completion, one of the bundled pool sketches chosen by the
  completion's hash and marked with it, so no two rollouts share a render and nothing comes from the cache.

The trainer is unchanged otherwise; the cell alternates early scoring off and on from step to step
(`watercolour.policy.early_scoring`), so both modes share one compiled policy.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewards.length import completion_text
from rewards.scoring.composite import CompositeReward


POOL_SKETCHES = Path(__file__).resolve().parents[2] / "ground" / "seed_pool"


class PoolSketchReward(CompositeReward):
    """The composite reward, scoring a real pool sketch in place of each random completion."""

    __name__ = "watercolour_reward"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sketches = [path.read_text() for path in sorted(POOL_SKETCHES.glob("*.js"))]

    def scored_text(self, completion: Any) -> str:
        text = completion_text(completion)
        mark = zlib.crc32(text.encode())
        sketch = self.sketches[mark % len(self.sketches)]
        return f"```javascript\n// rollout {mark:08x}\n{sketch.strip()}\n```"


# The recipe's completion lengths (its judge-led run's published curves): 2,000 tokens on average a step (the thirds'
# means lie between 1,772 and 2,275), and one row of eight at the 8,192 cap in 6 of 110 steps, so about 0.68% of
# rows. A log-normal with that mean and that tail (sigma 0.659, median 1,607) is the assumption drawn from here.
RECIPE_MEAN_TOKENS = 2000
RECIPE_CLIP_TOKENS = 8192
RECIPE_SIGMA = 0.659
RECIPE_MU = math.log(RECIPE_MEAN_TOKENS) - RECIPE_SIGMA**2 / 2


def half_to_budget(draw: random.Random, budget: int) -> int:
    """A policy under the length ramp writes close to its budget, and rows finish at different times."""
    return draw.randint(budget // 2, budget)


def recipe_lengths(draw: random.Random, budget: int) -> int:
    """A length from the recipe's own distribution, at most the budget."""
    return max(1, min(budget, round(draw.lognormvariate(RECIPE_MU, RECIPE_SIGMA))))


LENGTHS: dict[str, Callable[[random.Random, int], int]] = {
    "half-to-budget": half_to_budget,
    "recipe": recipe_lengths,
}


class ForcedLengths:
    """A logits processor that ends each row at its drawn length with the end-of-sequence token."""

    def __init__(self, eos_token_id: int, budget: int, rows: int, seed: int, draw: str = "half-to-budget") -> None:
        rng = random.Random(seed)
        self.lengths = [LENGTHS[draw](rng, budget) for _ in range(rows)]
        self.eos_token_id = eos_token_id
        self.start: int | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self.start is None:
            self.start = input_ids.shape[1]
        generated = input_ids.shape[1] - self.start
        due = torch.tensor([generated + 1 >= length for length in self.lengths], device=scores.device)
        forced = torch.full_like(scores, float("-inf"))
        forced[:, self.eos_token_id] = 0.0
        return torch.where(due[:, None], forced, scores)


def force_lengths(trainer: Any, budget: int, draw: str = "half-to-budget") -> None:
    """From now on, each rollout's rows end at drawn lengths (seeded by the step) instead of the budget."""
    import functools

    from transformers import LogitsProcessorList

    model = trainer.accelerator.unwrap_model(trainer.model_wrapped)
    generate = model.generate
    eos = int(trainer.eos_token_ids[0])

    @functools.wraps(generate)
    def with_lengths(*args: Any, **kwargs: Any) -> Any:
        rows = kwargs["input_ids"].shape[0]
        processor = ForcedLengths(eos, budget, rows, seed=paired_seed(trainer.state.global_step + 1), draw=draw)
        kwargs["logits_processor"] = LogitsProcessorList([processor])
        return generate(*args, **kwargs)

    model.generate = with_lengths


def paired_seed(step: int) -> int:
    """The drawn lengths' seed for `step`: steps 2 and 3 share one, 4 and 5 the next, ... (step 1 compiles alone).

    A batch decodes until its longest row ends, so steps with different draws differ in generation time by more
    than scoring changes; an early step and the step after it (scored after generation) draw the same lengths, and
    their whole step times compare the two modes directly."""
    return step // 2


def alternate_early_scoring(trainer: Any) -> None:
    """Step 1 (it compiles) and every odd step score after generation; even steps score early."""
    from transformers import TrainerCallback

    class Alternate(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            trainer.early_scoring = (state.global_step + 1) % 2 == 0

    trainer.add_callback(Alternate())
