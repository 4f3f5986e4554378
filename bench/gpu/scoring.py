"""Real scoring in a GPU benchmark step: what renders cost a step, with and without early scoring.

A random policy writes token soup that the gate refuses at once, and it never ends a completion by itself, so
both the scoring cost and the spread of completion lengths would be missing. The cell puts them back as a
rehearsal does (`watercolour.rehearsal`): rows end at drawn lengths (`force_lengths`), and the reward scores one
of the bundled pool sketches in place of each completion (`PoolSketches`). Here each early step and the step after
it draw the same lengths (`paired_seed`), and the cell alternates early scoring off and on from step to step
(`watercolour.policy.early_scoring`), so both modes share one compiled policy.
"""

from __future__ import annotations

from typing import Any

from watercolour.rehearsal import lengths


def paired_seed(step: int) -> int:
    """The drawn lengths' seed for `step`: steps 2 and 3 share one, 4 and 5 the next, ... (step 1 compiles alone).

    A batch decodes until its longest row ends, so steps with different draws differ in generation time by more
    than scoring changes; an early step and the step after it (scored after generation) draw the same lengths, and
    their whole step times compare the two modes directly."""
    return step // 2


def drawn_rollouts(trainer: Any, budget: int, draw: str = "recipe") -> None:
    """From now on, a step's rollouts are made at once instead of decoded: random tokens, each row ended with the
    end-of-sequence token at the length `force_lengths` would draw for that step (seeded by the step, as the recipe
    cell draws them), returned as `generate` returns them. Scoring, the advantages and the update then run as in a
    decoded step, on rows of the same lengths: the steps time the update alone, in seconds rather than minutes."""
    import torch

    model = trainer.accelerator.unwrap_model(trainer.model_wrapped)
    eos = int(trainer.eos_token_ids[0])
    pad = model.generation_config.pad_token_id
    pad = eos if pad is None else int(pad)
    vocab = min(len(trainer._tokenizer), model.get_input_embeddings().num_embeddings)
    filler = min({0, 1, 2} - {eos, pad})  # an ordinary token in place of a drawn EOS or pad

    def generate(*args: Any, input_ids: Any, **kwargs: Any) -> Any:
        rows = input_ids.shape[0]
        drawn = lengths.ForcedLengths(eos, budget, rows, trainer.state.global_step + 1, draw).lengths
        generator = torch.Generator().manual_seed(trainer.state.global_step + 1)
        tokens = torch.randint(0, vocab, (rows, max(drawn)), generator=generator)
        tokens[(tokens == eos) | (tokens == pad)] = filler
        for row, length in enumerate(drawn):
            tokens[row, length - 1] = eos
            tokens[row, length:] = pad
        return torch.cat([input_ids, tokens.to(input_ids.device)], dim=1)

    model.generate = generate


def force_lengths(trainer: Any, budget: int, draw: str = "half-to-budget", paired: bool = True) -> None:
    """The rehearsal's drawn lengths: paired across each early step and the step after it (the `real` cell's A/B),
    or, unpaired, seeded by the step as `watercolour rehearse` and a Prefect rehearsal draw them (the `recipe`
    cell, so its steps compare one to one with the product's routes in the same lease)."""
    if paired:
        lengths.force_lengths(trainer, budget, draw, seed_of=paired_seed)
    else:
        lengths.force_lengths(trainer, budget, draw)


def alternate_early_scoring(trainer: Any) -> None:
    """Step 1 (it compiles) and every odd step score after generation; even steps score early."""
    from transformers import TrainerCallback

    class Alternate(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            trainer.early_scoring = (state.global_step + 1) % 2 == 0

    trainer.add_callback(Alternate())
