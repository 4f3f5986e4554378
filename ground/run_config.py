"""The run configuration: one typed object, loaded from a named preset and overridden by parameters.

`RunConfig` is a pydantic model with a description on every field, so Prefect renders it as a form and the
CLI, a deployment and a test all build it the same way: `load_config("judge-led", {"aesthetic.url": ...})`
(`deployments.presets`, which also reads each term's settings by the term's own model and checks each weight and
setting names a registered reward term). It is validated once, when built. Its scoring half is `RunConfig.scoring`
(`ground.settings.ScoringSettings`): that, never this, is what the scoring engine and the reward terms are given.
Nothing here reads the environment: secrets are read by the backends when they are called, through the variable
names the settings hold.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ground.prompt import DEFAULT_SUBJECT, PromptStyle
from ground.settings import RewardSettings, ScoringSettings


# TRL's default generation path, or the fast path the GPU benchmark measured (`training.generation`).
GenerationPath = Literal["trl", "fast"]

# Settings one choice replaced, each with what to write instead: a configuration that still names one is refused
# with this line, not pydantic's "extra inputs are not permitted". The levers they set one by one are the GPU
# benchmark's (`watercolour.policy.generation.GenerationPlan`).
CHOOSE_GENERATION = (
    "is no longer a setting: choose training.generation=fast (the measured fast path, each of its levers on) or "
    "training.generation=trl (TRL's default path); leave it unset for fast on a GPU and trl on CPU"
)
REPLACED_SETTINGS = {
    f"training.{name}": f"training.{name} {CHOOSE_GENERATION}"
    for name in (
        "generation_cache",
        "generation_compile",
        "prompt_pad_multiple",
        "early_scoring",
        "generation_merge_adapter",
        "generation_packed_gqa",
        "generation_grouped_experts",
        "generation_written_only",
        "generation_skip_guards",
        "generation_deferred_stop",
    )
}


class PipelineSettings(BaseModel):
    """Pipelined rollouts: the decode batch kept full across steps, within a staleness bound."""

    model_config = ConfigDict(extra="forbid")

    max_staleness: int = Field(
        default=0,
        ge=0,
        description="0 = synchronous: a step decodes its own group, and its batch waits for the longest row. N > 0: "
        "a slot a finished row frees starts a row of one of the next N steps at once, so the decode batch stays "
        "full; no row is trained more than N updates after the weights that began it, and the loss weighs each "
        "token by TRL's truncated importance ratio of the trained weights to the sampling ones "
        "(watercolour.pipeline.rollouts). One process, one prompt per run, no repaint episodes.",
    )


class TrainingSettings(BaseModel):
    """GRPO settings, with the published recipe's values as defaults."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _replaced_settings_name_their_replacement(cls, data: object) -> object:
        if isinstance(data, dict):
            for name in data:
                if f"training.{name}" in REPLACED_SETTINGS:
                    raise ValueError(REPLACED_SETTINGS[f"training.{name}"])
        return data

    model: str = Field(
        default="Qwen/Qwen3.5-35B-A3B",
        description="Policy model: a hub id, a local path, or `shape:NAME` for a published shape with random weights "
        "(a rehearsal of the run's costs before any weights are fetched: `watercolour rehearse --preset PRESET`).",
    )
    subject: str = Field(default=DEFAULT_SUBJECT, description="What the policy is asked to paint.")
    prompt: PromptStyle = Field(
        default="full",
        description="System prompt: 'full' (the recipe's) or 'short' (~230 tokens, for warm-started CPU demos).",
    )
    lora_r: int = Field(default=16, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(default=32, ge=1, description="LoRA alpha (2 x rank in the recipe).")
    learning_rate: float = Field(default=5e-5, gt=0, description="Peak learning rate (1e-6 left five runs flat).")
    lr_scheduler: str = Field(
        default="constant_with_warmup",
        description="Transformers scheduler name; 'linear' spent most of its displacement in the first third.",
    )
    warmup_steps: int = Field(default=5, ge=0, description="Warm-up optimizer steps.")
    scale_rewards: Literal["none", "group", "batch"] = Field(
        default="none",
        description="GRPO advantage scaling; 'none' because one gate rejection inflates a group's std.",
    )
    num_generations: int = Field(default=8, ge=2, description="Completions per prompt (the GRPO group size G).")
    top_p: float = Field(default=0.95, gt=0, le=1, description="Nucleus sampling, training and evaluation.")
    top_k: int = Field(default=20, ge=0, description="Top-k sampling (0 = off), training and evaluation.")
    temperature: float = Field(
        default=1.0, gt=0, description="Sampling temperature; the one value used by training AND evaluation."
    )
    max_completion_length: int = Field(default=8192, ge=1, description="Completion token budget.")
    per_device_batch_size: int = Field(default=1, ge=1, description="Prompts per device per micro-batch.")
    gradient_accumulation_steps: int = Field(default=8, ge=1, description="Micro-batches per optimizer step.")
    steps: int = Field(default=200, ge=1, description="Optimizer steps (max_steps).")
    save_steps: int = Field(default=10, ge=1, description="Checkpoint every this many steps (for resume).")
    bf16: bool | None = Field(default=None, description="bfloat16 training; None = on when the device supports it.")
    gradient_checkpointing: bool | None = Field(default=None, description="None = on when training on a GPU.")
    generation: GenerationPath | None = Field(
        default=None,
        description="How rollouts are generated: 'trl' = TRL's default transformers path (a dynamic cache, nothing "
        "compiled); 'fast' = the measured fast path (a static cache and a compiled decode step, the LoRA merged into "
        "the weights for each rollout, each completion scored as soon as it ends; docs/gpu.md lists its parts and "
        "what each is worth). None = 'fast' with a GPU, 'trl' on CPU, where compilation and early renders would "
        "only take cores from generation. The first fast step pays the compilation.",
    )
    pipeline: PipelineSettings = Field(
        default_factory=PipelineSettings,
        description="Rollouts pipelined across steps (pipeline.max_staleness > 0) or synchronous (0, the default).",
    )
    start_adapter: Path | None = Field(default=None, description="Warm start from these LoRA adapter weights.")
    warm_start_examples: int = Field(
        default=0,
        ge=0,
        description="Before GRPO, SFT the LoRA on this many of the demo's compact sketches (two epochs) and start "
        "from that adapter, unless start_adapter is set. Made once per machine and setting, then reused from the "
        "warm-start cache ($WATERCOLOUR_CACHE, else ~/.cache/watercolour). 0 = no warm start.",
    )
    processes: int = Field(
        default=1,
        ge=1,
        description="Training processes on this host: 1 trains in the calling process; N > 1 launches N ranks (one a "
        "GPU through accelerate, DDP unless accelerate_config names another; gloo through torchrun on a CPU), each "
        "generating and scoring its share of a step with its share of the browsers, the run directory written once.",
    )
    accelerate_config: str | None = Field(
        default=None,
        description="The accelerate config the ranks are launched with on GPUs (deployments/accelerate/fsdp.yaml for "
        "FSDP); None = deployments/accelerate/ddp.yaml.",
    )
    seed: int = Field(default=0, description="Seeds LoRA initialisation, sampling and data order (with resume).")
    project: str = Field(
        default="watercolour", description="trackio project the run logs to (the run is named after its directory)."
    )

    @model_validator(mode="after")
    def _rehearsals_do_not_warm_start(self) -> TrainingSettings:
        if self.model.startswith("shape:") and (self.warm_start_examples or self.start_adapter is not None):
            raise ValueError(
                f"training.model={self.model} is a published shape with random weights (a rehearsal), which has "
                "nothing to warm-start from: set training.warm_start_examples=0 and leave training.start_adapter empty"
            )
        return self

    @model_validator(mode="after")
    def _pipelined_rollouts_run_in_one_process(self) -> TrainingSettings:
        if self.pipeline.max_staleness and self.processes > 1:
            raise ValueError(
                "training.pipeline.max_staleness pipelines one process's rollouts: set training.processes=1, or "
                "training.pipeline.max_staleness=0 to train in several processes"
            )
        return self


class RepaintSettings(BaseModel):
    """Multi-turn episodes: the policy paints, sees an observation of the picture, and paints again."""

    model_config = ConfigDict(extra="forbid")

    turns: int = Field(
        default=2, ge=1, description="Paintings an episode allows; it ends sooner when the policy stops calling paint."
    )
    reward: Literal["final", "improvement"] = Field(
        default="final",
        description="The episode's reward: 'final' = the last painting's composite reward; 'improvement' = that "
        "plus improvement_weight x (last - first).",
    )
    improvement_weight: float = Field(
        default=0.5, ge=0, description="Weight of the last painting's gain over the first ('improvement' reward)."
    )
    turn_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Tokens one turn may generate (a painting, or the reply after an observation); None = up to the "
        "episode's whole budget (training.max_completion_length). A step lasts as long as its longest turn, so a "
        "first painting that rambles to the episode's budget holds up the whole batch.",
    )
    vision: bool = Field(
        default=False,
        description="Return the rendered PNG as an image content block with the text observation (a VLM policy).",
    )
    warm_start_examples: int = Field(
        default=0,
        ge=0,
        description="Before GRPO, SFT the policy on this many compact sketches written as paint calls (kept in "
        "RUN_DIR/warmstart and reused), unless training.start_adapter is set; 0 = no warm start.",
    )


class OpenEnvSettings(BaseModel):
    """Score through the painting environment served over OpenEnv (openenv_painting/, docs/openenv.md)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="The server's base URL (http(s):// or ws(s)://), e.g. http://127.0.0.1:8000.")
    max_sessions: int = Field(
        default=16, ge=1, description="Sessions this trainer holds open at once (the server has its own cap)."
    )
    message_timeout_s: float = Field(
        default=600.0, gt=0, description="How long one reset or painting may take, queueing on the server included."
    )
    attempts: int = Field(
        default=3, ge=1, description="Tries per rollout when the server is unreachable or at capacity."
    )
    backoff_s: float = Field(default=2.0, gt=0, description="Base of the jittered exponential backoff between tries.")


class SpaceSettings(BaseModel):
    """Which Space scores the run and how its lifecycle is driven."""

    repo_id: str = Field(description="The scorer Space, e.g. 'me/watercolour-hpsv3'.")
    endpoint: str = Field(default="https://huggingface.co", description="The Hub API endpoint.")
    token_env: str = Field(default="HF_TOKEN", description="Env var holding the Space owner's token.")
    wake_timeout_s: float = Field(default=900.0, gt=0, description="Budget to reach RUNNING after a restart.")
    load_timeout_s: float = Field(default=900.0, gt=0, description="Budget for the app's /health to say loaded.")
    poll_s: float = Field(default=5.0, gt=0, description="Seconds between runtime and /health polls.")
    at_end: Literal["pause", "sleep"] = Field(
        default="pause", description="'pause' stops billing now; 'sleep' lets it idle out after `idle_s`."
    )
    idle_s: int = Field(
        default=900, ge=-1, description="Server-side sleep time set at run start: the backstop for a killed run."
    )


def space_url(repo_id: str) -> str:
    """The URL a Space's app is served at: https://<owner>-<name>.hf.space, lowercased, other characters as '-'."""
    return "https://" + re.sub(r"[^a-z0-9]+", "-", repo_id.lower()).strip("-") + ".hf.space"


class RunConfig(RewardSettings):
    """Everything one training run needs, resolved and validated once: the reward's settings (`RewardSettings`:
    the weights, the gate, the render, the pool and each service term's own settings under its name) and these."""

    name: str = Field(description="The run's name (the preset's unless overridden); names the run directory.")
    pool_revision: str | None = Field(
        default=None,
        description="The pool revision the run trains against (pool pack's REVISION): recorded when the run starts; "
        "a resumed run whose pool_dir now holds another revision is refused.",
    )
    training: TrainingSettings = Field(default_factory=TrainingSettings, description="GRPO settings.")
    repaint: RepaintSettings | None = Field(
        default=None,
        description="Multi-turn repaint episodes through TRL's environment API (docs/repaint.md); None = one "
        "painting per rollout.",
    )
    openenv: OpenEnvSettings | None = Field(
        default=None,
        description="None = score in process; set (openenv.url=http://host:8000) = every rollout is painted and "
        "scored by the OpenEnv painting server, one session per rollout, with the same rewards for the same seeds.",
    )
    run_dir: Path = Field(
        default_factory=lambda data: Path("runs") / data["name"], description="Where the run lives; runs/<name>."
    )
    space: SpaceSettings | None = Field(
        default=None,
        description="The Hugging Face Space serving the aesthetic scorer (space.repo_id=owner/name): the train flow "
        "wakes it, waits for its model, sets its idle backstop and puts it to sleep when the run ends, whichever "
        "way it ends. aesthetic.url defaults to the Space's own URL.",
    )

    @model_validator(mode="after")
    def _the_space_serves_the_aesthetic_scorer(self) -> RunConfig:
        # The Space's own URL is the aesthetic term's `url` unless one is given (its settings are still as written:
        # the term's model reads them, `rewards.scoring.terms.resolve_terms`).
        extra = self.model_extra if self.model_extra is not None else {}
        aesthetic = extra.get("aesthetic") or {}
        if self.space is not None and isinstance(aesthetic, dict) and not aesthetic.get("url"):
            extra["aesthetic"] = {**aesthetic, "url": space_url(self.space.repo_id)}
        return self

    @model_validator(mode="after")
    def _repaint_episodes_are_not_pipelined(self) -> RunConfig:
        if self.repaint is not None and self.training.pipeline.max_staleness:
            raise ValueError(
                "repaint episodes generate turn by turn through TRL's tool loop, which pipelined rollouts do not "
                "drive: set training.pipeline.max_staleness=0 for a repaint run"
            )
        return self

    @property
    def scoring(self) -> ScoringSettings:
        """What the scoring engine reads of this run: its reward settings, the subject and the run directory."""
        reward = {name: getattr(self, name) for name in RewardSettings.model_fields}
        return ScoringSettings(
            **reward, **(self.model_extra or {}), subject=self.training.subject, run_dir=self.run_dir
        )

    def save(self, path: Path) -> None:
        """Write the resolved configuration as YAML (atomically: a run directory never holds half a config)."""
        from ground.files import write_atomic

        text = yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)
        write_atomic(Path(path), text.encode())

    @classmethod
    def load(cls, path: Path) -> RunConfig:
        """Read a configuration written by `save`."""
        return cls.model_validate(yaml.safe_load(Path(path).read_text()))
