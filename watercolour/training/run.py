"""One training run end to end: where it starts (fresh, or the latest checkpoint), the configuration it trains with
(the pool revision pinned, the warm start it asks for), the trainer `watercolour.training.trainer` builds, and what
the run leaves behind: its adapter, gallery, curves and store. A run of several processes launches its ranks here
(`watercolour.training.launch`) and each rank comes back through `train`.

Like the trainer, this module imports torch, transformers and TRL at the top (through `watercolour.training.trainer`):
whoever imports it sets `TRACKIO_DIR` first (`watercolour.run_records.run_dir.use_run_environment`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ground.run_config import RunConfig
from rewards.scoring.composite import OnScored
from rewards.scoring.dead_letters import DeadLetterLog
from watercolour.policy.adapter import export_adapter
from watercolour.policy.generation import GenerationPlan
from watercolour.run_records.curves import CurvesFile
from watercolour.run_records.gallery import write_gallery
from watercolour.run_records.rollout_store import RolloutStore, gallery_items
from watercolour.run_records.run_dir import CHECKPOINTS_DIR, checkpoint_step, checkpoint_to_resume
from watercolour.run_records.trainer_callbacks import Echo, tell
from watercolour.training.distributed import process_state, refuse_repaint_in_processes
from watercolour.training.launch import FailAtStep, launched, record_rank_failure, train_in_processes
from watercolour.training.scoring_route import FanOut
from watercolour.training.trainer import StepHookFactory, build_trainer, close_reward


ADAPTER_DIR = "adapter"
GALLERY_DIR = "gallery"


def resume_point(run_dir: Path, resume: bool) -> Path | None:
    """The checkpoint to resume from (None: start at step 0); a checkpoint without `resume` is refused."""
    return checkpoint_to_resume(run_dir, resume, "pass --resume to continue it, or choose another --run-dir")


def forget_steps_after(run_dir: Path, checkpoint: Path | None) -> None:
    """Drop everything recorded beyond the checkpoint (all of it without one).

    The rollouts, curve rows and dead letters of the step that was in flight (and of any step after the last
    checkpoint) are removed, because the resumed run records those steps again.
    """
    step = checkpoint_step(checkpoint) if checkpoint is not None else 0
    RolloutStore(run_dir, num_generations=1).truncate(after_step=step)
    CurvesFile(run_dir).truncate(after_step=step)
    DeadLetterLog(run_dir).truncate(after_step=step)


class PoolRevisionChanged(RuntimeError):
    """The pool folder no longer holds the revision the run trained against."""


def pin_pool_revision(config: RunConfig, started: Path | None) -> RunConfig:
    """The configuration with the pool revision it trains against; a resumed run keeps the one it started with
    (its saved config at `started`), and a pool folder that changed since is refused rather than trained on."""
    from ground.reference_pool import pool_revision

    found = pool_revision(config.pool_dir)
    expected = RunConfig.load(started).pool_revision if started is not None and started.is_file() else None
    expected = expected or config.pool_revision
    if expected is not None and expected != found:
        raise PoolRevisionChanged(
            f"the pool at {config.pool_dir or 'the bundled pool'} is revision {found}, but this run trains against "
            f"revision {expected}: point pool_dir at that revision's folder (pool/build keeps each under "
            "revisions/<revision>)"
        )
    return config.model_copy(update={"pool_revision": found})


def with_warm_start(config: RunConfig, run_dir: Path, processes: Any, echo: Echo) -> RunConfig:
    """The configuration starting from the warm start it asks for (`warm_start_cache.warm_started`): the main process
    makes it or finds it, the others wait and take the same folder."""
    from watercolour.training.warm_start_cache import warm_started

    if processes.is_main_process:
        config = warm_started(config, run_dir, echo=lambda line: tell(echo, line))
    processes.wait_for_everyone()
    return config if processes.is_main_process else warm_started(config, run_dir)


def train(
    config: RunConfig,
    resume: bool = False,
    echo: Echo = True,
    fan_out: FanOut | None = None,
    step_hook: StepHookFactory | None = None,
    fail_at_step: int | None = None,
    plan: GenerationPlan | None = None,
) -> dict[str, Path]:
    """One run end to end: resume point, training, the adapter and the run's gallery. Returns what it wrote.

    With `training.processes` > 1 (and not already a rank), the run launches its ranks and waits for them
    (`watercolour.training.launch`): `step_hook` then sees each step once the main rank has stored it, and a fan-out
    is not used (each rank scores in process). Every rank calls this; the main process alone writes the run's files
    (the others return an empty dict: they wrote none of them) and every process trains its share. `fail_at_step`
    fails the run on purpose in the step after it (rehearsing a resume). `plan` sets the generation levers one by one
    for a run in this process (a test's); None = the configuration's `training.generation`.
    """
    assert config.run_dir is not None, "RunConfig resolves run_dir when it is built"
    run_dir = Path(config.run_dir)
    if config.training.processes > 1 and not launched():
        resume_point(run_dir, resume)  # refused here, before any rank starts, as in one process
        on_step = stored_step_hook(config, run_dir, step_hook) if step_hook is not None else None
        return train_in_processes(config, resume, lambda line: tell(echo, line), on_step, fail_at_step)
    if fail_at_step is not None:
        step_hook = failing_at(fail_at_step, step_hook)
    try:
        return train_here(config, run_dir, resume, echo, fan_out, step_hook, plan)
    except Exception as error:
        if launched():
            record_rank_failure(run_dir, error)
        raise


def failing_at(step: int, step_hook: StepHookFactory | None) -> StepHookFactory:
    """`step_hook` with `FailAtStep` after it."""

    def hook(config: RunConfig, run_dir: Path, then: OnScored | None) -> OnScored:
        return FailAtStep(step, step_hook(config, run_dir, then) if step_hook is not None else then)

    return hook


def stored_step_hook(config: RunConfig, run_dir: Path, step_hook: StepHookFactory) -> Callable[[int], None]:
    """A launched run's steps, handed to `step_hook` from the store once the main rank has written each."""
    hook = step_hook(config, run_dir, None)
    store = RolloutStore(run_dir, config.training.num_generations)

    def on_step(step: int) -> None:
        prompts, completions, parts = store.step(step)
        hook(prompts, completions, parts, {"trainer_state": SimpleNamespace(global_step=step - 1)})

    return on_step


def train_here(
    config: RunConfig,
    run_dir: Path,
    resume: bool,
    echo: Echo,
    fan_out: FanOut | None,
    step_hook: StepHookFactory | None,
    plan: GenerationPlan | None = None,
) -> dict[str, Path]:
    """`train` in this process (one of a launched run's ranks, or the only one)."""
    processes = process_state()
    checkpoint = resume_point(run_dir, resume)  # every process decides the same, so all refuse or none does
    # Every process pins the same revision (a read-only hash); a resume against a changed pool is refused by all.
    config = pin_pool_revision(config, run_dir / "config.yaml" if checkpoint is not None else None)
    refuse_repaint_in_processes(config, processes.num_processes)
    config = with_warm_start(config, run_dir, processes, echo)
    if processes.is_main_process:
        forget_steps_after(run_dir, checkpoint)
        config.save(run_dir / "config.yaml")
    processes.wait_for_everyone()  # nobody records a step before the main process forgot the ones to redo
    trainer = build_trainer(config, run_dir, echo=echo, fan_out=fan_out, step_hook=step_hook, plan=plan)
    try:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    finally:
        close_reward(trainer)
    # A collective under FSDP (the shards are gathered), the model's own state dict otherwise: every process calls it.
    state_dict = trainer.accelerator.get_state_dict(trainer.model)
    if not processes.is_main_process:
        return {}
    adapter = export_adapter(
        trainer,
        run_dir / ADAPTER_DIR,
        base_model=config.training.model,
        config_name=config.name,
        state_dict=state_dict,
    )
    store = RolloutStore(
        run_dir, config.training.num_generations, preset=config.name, pool_revision=config.pool_revision
    )
    gallery = write_gallery(
        gallery_items(store.rows(), run_dir / GALLERY_DIR, run_dir),
        run_dir / GALLERY_DIR,
        f"{config.name}: {run_dir.name}",
    )
    return {
        "config": run_dir / "config.yaml",
        "curves": CurvesFile(run_dir).path,
        "rollouts": store.root,
        "checkpoints": run_dir / CHECKPOINTS_DIR,
        "adapter": adapter,
        "gallery": gallery,
    }
