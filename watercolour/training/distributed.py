"""What changes when one run trains in several processes (`accelerate launch`, DDP or FSDP): who writes, and what.

TRL's GRPOTrainer already splits the work: each process generates its slice of the step's completions, scores it
with its own reward function (and so its own browser pool and clients), and gathers the rewards so that groups
are normalised whole. The run directory must still read as one run, so:

- the browser pool is split between the processes (`per_process_config`): `render.browsers` is the run's total;
- each process's reward hands its scored slice to `ScoredSlices` instead of the store; the trainer gathers the
  slices in process order (the order TRL gathered the rewards in, so groups stay contiguous) and the main
  process alone writes the step's one shard and logs the step's reward metrics from the whole batch (TRL
  averages a metric over the processes that logged it, so a per-slice count of dead letters would be halved);
- only the main process writes `config.yaml`, the curves, the adapter and the gallery, and truncates on resume;
- repaint episodes record their own turns, which are not gathered, so a repaint run of several processes is refused
  (`refuse_repaint_in_processes`);
- dead letters are appended by whichever process met them (one `write` on an O_APPEND descriptor each), and the
  content cache is written atomically under unique temporary names, so both stay safe to share.
"""

from __future__ import annotations

from typing import Any

from ground.records import RewardParts
from ground.run_config import RunConfig


def process_state() -> Any:
    """accelerate's process state (rank, world size, barrier); sets up the process group under `accelerate launch`.

    Built the way the trainer's arguments build it (on CPU when no GPU is visible), so both see the same state.
    """
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def per_process_config(config: RunConfig, world_size: int) -> RunConfig:
    """The configuration one of `world_size` processes scores with: its share of the run's browsers, at least one."""
    if world_size == 1:
        return config
    render = config.render.model_copy(update={"browsers": max(1, config.render.browsers // world_size)})
    return config.model_copy(update={"render": render})


class ScoredSlices:
    """The reward's `on_scored` hook in every process: keeps the slice this process scored until the trainer
    gathers the step (`gather`). Picklable, like the reward that carries it."""

    def __init__(self) -> None:
        self._slice: tuple[list[Any], list[Any], list[RewardParts]] | None = None

    def __call__(self, prompts: list[Any], completions: list[Any], parts: list[RewardParts], kwargs: dict) -> None:
        self._slice = (list(prompts), list(completions), list(parts))

    def gather(self) -> tuple[list[Any], list[Any], list[RewardParts]]:
        """Every process's slice, concatenated in process order; a collective: every process calls it each step."""
        from accelerate.utils import gather_object

        assert self._slice is not None, "the reward scored nothing this step"
        slices, self._slice = gather_object([self._slice]), None
        prompts = [prompt for batch in slices for prompt in batch[0]]
        completions = [completion for batch in slices for completion in batch[1]]
        parts = [part for batch in slices for part in batch[2]]
        return prompts, completions, parts


class RepaintInOneProcess(RuntimeError):
    """Repaint episodes were asked of a multi-process run; they train in one process (docs/repaint.md)."""


def refuse_repaint_in_processes(config: RunConfig, world_size: int) -> None:
    """Repaint runs train in one process: its episodes record their own turns, which are not gathered."""
    if config.repaint is not None and world_size > 1:
        raise RepaintInOneProcess(
            "repaint episodes train in one process (their turns are recorded by the environments, not gathered "
            f"across processes); run it without `accelerate launch` (world size {world_size})"
        )
