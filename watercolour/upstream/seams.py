"""Where the trainer reaches into TRL's and transformers' private code: the one list of those seams, and the check,
run when a trainer is built, that the installed versions are the ones the list was written against.

TRL's `GRPOTrainer` has no public hook for timing its phases, streaming finished rows to the reward, capping a tool
loop's turns or pipelining rollouts, so `TimedGRPOTrainer` overrides its private methods; the fast path also swaps a
few transformers functions while a rollout decodes. A private method may change its arguments in any release, and a
changed one fails deep inside a step, or worse, silently drops an argument. So each seam is recorded here with the
signature it was written against (`tests/upstream/test_seams.py` compares each with the installed upstream's), and a
trainer refuses to start on versions other than `WRITTEN_FOR` (the pins of `requirements.lock`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
from dataclasses import dataclass
from typing import Any


# The versions every seam below was written and checked against: `requirements.lock` pins the same.
WRITTEN_FOR = {"trl": "1.16.0", "transformers": "5.23.0"}


@dataclass(frozen=True)
class Seam:
    """One place the project overrides or swaps an upstream private callable."""

    upstream: str  # "module:Qualified.name" of the upstream callable
    signature: str  # str(inspect.signature(upstream)) in the versions of WRITTEN_FOR
    ours: str  # "module:Qualified.name" of the override, or of the code that swaps the callable while it runs


TRAINER = "watercolour.training.trainer:TimedGRPOTrainer"
GRPO = "trl.trainer.grpo_trainer:GRPOTrainer"
QWEN3_5_MOE = "transformers.models.qwen3_5_moe.modeling_qwen3_5_moe"
GATED_DELTA = (
    "(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, {chunk}"
    "initial_state: torch.Tensor | None = None, output_final_state: bool = False, use_qk_l2norm_in_kernel: bool = "
    "False, **kwargs) -> tuple[torch.Tensor, torch.Tensor | None]"
)

SEAMS = (
    # The trainer's overrides of GRPOTrainer's private methods (watercolour.training.trainer).
    Seam(
        f"{GRPO}._generate_and_score_completions",
        "(self, inputs: list[dict[str, torch.Tensor | typing.Any]]) -> dict[str, torch.Tensor | typing.Any]",
        f"{TRAINER}._generate_and_score_completions",
    ),
    Seam(
        f"{GRPO}._prepare_inputs",
        "(self, generation_batch: dict[str, torch.Tensor | typing.Any]) -> dict[str, torch.Tensor | typing.Any]",
        f"{TRAINER}._prepare_inputs",
    ),
    Seam(f"{GRPO}._generate", "(self, prompts: list)", f"{TRAINER}._generate"),
    Seam(f"{GRPO}._tokenize_prompts", "(self, prompts: list)", f"{TRAINER}._tokenize_prompts"),
    Seam(
        f"{GRPO}._tool_call_loop",
        "(self, prompts, prompt_ids, completion_ids, completions, logprobs, images, multimodal_fields)",
        f"{TRAINER}._tool_call_loop",
    ),
    Seam(
        f"{GRPO}._generate_single_turn",
        "(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False)",
        f"{TRAINER}._generate_single_turn",
    ),
    Seam(
        f"{GRPO}._calculate_rewards",
        "(self, inputs, prompts, completions, completion_ids_list)",
        f"{TRAINER}._calculate_rewards",
    ),
    Seam(f"{GRPO}._save_checkpoint", "(self, model, trial)", f"{TRAINER}._save_checkpoint"),
    Seam(f"{GRPO}._compute_loss", "(self, model, inputs)", f"{TRAINER}._compute_loss"),
    Seam(
        f"{GRPO}._get_per_token_logps_and_entropies",
        "(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False, "
        "compute_aux_loss=False, pixel_values=None, image_grid_thw=None, num_images=None, pixel_attention_mask=None, "
        "spatial_shapes=None, num_tiles=None, image_sizes=None, token_type_ids=None, mm_token_type_ids=None, "
        "image_position_ids=None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]",
        f"{TRAINER}._get_per_token_logps_and_entropies",
    ),
    # transformers' callables the fast path swaps while a rollout decodes or a layer routes its kernels.
    Seam(
        "transformers.generation.utils:DeferredStopCheck.is_supported",
        "(device: torch.device, cache: 'Cache | None', cache_is_returned: bool, is_assistant: bool) -> bool",
        "watercolour.policy.generation:stop_checks_deferred",
    ),
    Seam(
        f"{QWEN3_5_MOE}:torch_chunk_gated_delta_rule",
        GATED_DELTA.format(chunk="chunk_size: int = 64, "),
        "watercolour.policy.linear_attention:route_gated_delta_rule",
    ),
    Seam(
        f"{QWEN3_5_MOE}:torch_recurrent_gated_delta_rule",
        GATED_DELTA.format(chunk=""),
        "watercolour.policy.linear_attention:route_recurrence",
    ),
)


class UpstreamMoved(RuntimeError):
    """TRL or transformers is not at the version the seams were written for."""


def installed_versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in WRITTEN_FOR}


def check_upstream(installed: dict[str, str] | None = None) -> None:
    """Refuse, in one line that says what to do, to train on other versions of TRL or transformers than the seams'."""
    installed = installed_versions() if installed is None else installed
    moved = [f"{name} {installed[name]}" for name, version in WRITTEN_FOR.items() if installed[name] != version]
    if moved:
        written = " and ".join(f"{name} {version}" for name, version in WRITTEN_FOR.items())
        raise UpstreamMoved(
            f"the trainer overrides private methods of {written} (watercolour/upstream/seams.py) and this "
            f"environment has {', '.join(moved)}: install the locked versions (`make setup`), or check each seam "
            "against the new version and update SEAMS and WRITTEN_FOR (`pytest tests/upstream/test_seams.py`)"
        )


def resolve(path: str) -> Any:
    """The object a "module:Qualified.name" path names (the raw class attribute, so a static method stays one)."""
    module_name, qualified = path.split(":")
    owner: Any = importlib.import_module(module_name)
    *parents, name = qualified.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)


def signature(path: str) -> str:
    """The signature of what `path` names, as `inspect` writes it."""
    found = resolve(path)
    return str(inspect.signature(found.__func__ if isinstance(found, staticmethod) else found))
