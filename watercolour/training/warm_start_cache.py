"""Which warm start a run starts from, the demo's warm-start recipe, and the cache of the warm starts a preset asks
for with `training.warm_start_examples`.

`warm_started(config, run_dir)` is the one place the run configuration decides its warm start: none when
`training.start_adapter` is set or nothing is asked for; the repaint run's own (`repaint.warm_start_examples`, kept
in its run directory); else the demo's (`training.warm_start_examples`). The train flow's task and the trainer both
call it. `cached_warm_start(config)` makes the demo's warm start for a configuration once per machine and setting and keeps
it in `$WATERCOLOUR_CACHE/warm-starts/<key>` (else `~/.cache/watercolour/...`); the demo itself keeps its warm
start in its run directory (`watercolour.training.demo_run`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from ground.run_config import RunConfig
from watercolour.policy.procedural import Style
from watercolour.training.warm_start import (
    ADAPTER_DIR,
    LEARNING_RATE,
    REPORT_FILE,
    WARMSTART_DIR,
    WarmStartReport,
    repaint_warm_start,
    starting_from,
    warm_start,
)


DEMO_PRESET = "demo"
# Measured on the 2-core dev box (docs/learning.md): full sketches (~1.8k tokens a row with the full prompt)
# never got one sample through the gate after 24 SFT steps. Compact sketches with the short prompt (~600 tokens a
# row): 24 examples seen twice, 48 steps in 154 s on 2 threads, loss 1.28 -> 0.13, and 75-100% of GRPO's first
# rollouts passed the gate.
DEMO_EXAMPLES = 24
DEMO_EPOCHS = 2.0
# Colours as CSS names: one choice of a few whole tokens, which GRPO can move without breaking a hex code.
DEMO_STYLE: Style = "named"
# The warm start paints the run's subject and its three neighbours (the same flower in other colours) in equal
# shares, and every prompt names only the flower: the policy starts knowing the flower and four palettes but not which one "peach"
# asks for, and the subject-aware stand-ins reward the subject's, so GRPO learns the subject (docs/learning.md).
DEMO_NEIGHBOURS = True
DEMO_COLOUR_BLIND = True
# Where `training.warm_start_examples` keeps the warm starts it made, one folder per setting (`cached_warm_start`).
CACHE_ENV = "WATERCOLOUR_CACHE"
WARM_STARTS = "warm-starts"
# Bumped when the recipe changes what a cached warm start holds, so an old one is not reused.
WARM_START_FORMAT = 1


def cache_root() -> Path:
    """$WATERCOLOUR_CACHE, else $XDG_CACHE_HOME/watercolour, else ~/.cache/watercolour."""
    if explicit := os.environ.get(CACHE_ENV):
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "watercolour"


def warm_start_key(config: RunConfig) -> str:
    """What the demo's warm start of this configuration depends on, hashed: the policy (a local folder by its
    weights' size and time), what the sketches paint and how long they may be, the LoRA and the recipe."""
    from watercolour.policy.loading import resolve_model
    from watercolour.policy.lora import device_settings

    training = config.training
    base = Path(resolve_model(training.model))
    weights = sorted(base.glob("*.safetensors")) + sorted(base.glob("*.bin")) if base.is_dir() else []
    what = {
        "format": WARM_START_FORMAT,
        "model": training.model,
        "weights": [(path.name, path.stat().st_size, path.stat().st_mtime_ns) for path in weights],
        "subject": training.subject,
        "prompt": training.prompt,
        "max_completion_length": training.max_completion_length,
        "seed": training.seed,
        "lora": (training.lora_r, training.lora_alpha),
        "bf16": device_settings(training)[0],
        "examples": training.warm_start_examples,
        "recipe": (DEMO_EPOCHS, DEMO_STYLE, DEMO_NEIGHBOURS, DEMO_COLOUR_BLIND, LEARNING_RATE),
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]


def cached_warm_start(
    config: RunConfig, echo: Callable[[str], None] | None = None
) -> tuple[Path, WarmStartReport, bool]:
    """The demo's warm start for `training.warm_start_examples`: its adapter folder, its report, and whether it
    was already in the cache. A new one is made in a scratch folder beside the cache's and moved into place whole,
    so a killed run leaves no half-written adapter and two runs making the same one keep the first."""
    root = cache_root() / WARM_STARTS
    final = root / warm_start_key(config)
    if (final / REPORT_FILE).is_file():
        return final / ADAPTER_DIR, WarmStartReport(**json.loads((final / REPORT_FILE).read_text())), True
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".making-", dir=root))
    try:
        report = warm_start(
            config,
            scratch,
            examples=config.training.warm_start_examples,
            epochs=DEMO_EPOCHS,
            style=DEMO_STYLE,
            neighbours=DEMO_NEIGHBOURS,
            colour_blind=DEMO_COLOUR_BLIND,
            echo=echo,
        )
        made = scratch / WARMSTART_DIR
        shutil.rmtree(made / "trainer", ignore_errors=True)  # the SFT trainer's output folder: nothing kept there
        report.adapter_dir = str(final / ADAPTER_DIR)
        (made / REPORT_FILE).write_text(json.dumps(asdict(report), indent=2) + "\n")
        try:
            made.rename(final)
        except OSError:  # another run put the same warm start there first: keep that one
            if not (final / REPORT_FILE).is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return final / ADAPTER_DIR, report, False


def describe_warm_start(adapter: Path, report: WarmStartReport, reused: bool) -> str:
    """One log line: where the warm start is, and what making it did."""
    made = (
        f"{report.examples} sketches x {report.epochs:g} epochs, {report.optimizer_steps} steps in "
        f"{report.seconds:.0f} s, loss {report.first_loss:.2f} -> {report.last_loss:.2f}"
    )
    return f"warm start {'reused from' if reused else 'made and kept in'} {adapter.parent} ({made})"


def needs_warm_start(config: RunConfig) -> bool:
    """Whether GRPO starts from a warm start `warm_started` makes or finds (not from a given adapter, or afresh)."""
    if config.training.start_adapter is not None:
        return False
    return bool(
        (config.repaint is not None and config.repaint.warm_start_examples) or config.training.warm_start_examples
    )


def warm_started(config: RunConfig, run_dir: Path, echo: Callable[[str], None] | None = None) -> RunConfig:
    """The configuration GRPO starts from: with `training.start_adapter` set to the warm start the configuration
    asks for, made on its first run and reused after that; unchanged when it asks for none. `echo` gets how making
    it goes and one line on what was made or reused."""
    if not needs_warm_start(config):
        return config
    if config.repaint is not None and config.repaint.warm_start_examples:
        return repaint_warm_start(config, run_dir)
    adapter, report, reused = cached_warm_start(config, echo=echo)
    if echo is not None:
        echo(describe_warm_start(adapter, report, reused))
    return starting_from(config, adapter)
