"""Correctness of the fast path, checked on the trainer the benchmark just stepped.

- Log-probs: one more rollout batch through the trainer's generation settings, keeping the logits the decode
  step produced, against the log-probs the GRPO loss computes (one full forward, no cache, no compilation) for
  the same sampled tokens. Both run in bf16, so they differ by rounding; what bf16 allows is measured, not
  assumed: a float32 copy of the policy scores the same tokens, and the fast path passes when its error against
  that reference is no larger than the slow path's own (mean and 99th percentile, with 10% slack and 1e-4 nats
  of floor, for float32 runs where the slow path is the reference itself).
- Loss: the GRPO loss of the last step's first micro-batch and the per-token log-probs it differentiates,
  computed before and after that compiled rollout: the compiled graphs and the static cache must leave the
  training forward untouched. (At a step's first pass the loss's value is the advantages' token-weighted mean,
  whatever the forward gives; the log-probs are what its gradient depends on, so both are compared.)
- Routing (MoE policies): with random weights most tokens are routed to other experts in bf16 than in float32,
  and every change of rounding reroutes another subset (`bench.gpu.moe_routing`), so the error against float32
  measures routing luck more than the path. The same rule is therefore also applied to the tokens that are stable
  under bf16 rounding: those whose every MoE layer picked float32's experts in the loss's forward and in each
  teacher-forced lever (four bf16 computations that round differently). The fast decode's own routing is not
  observed (its step is compiled); where it rerouted such a token, its error there counts against it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from bench.gpu.moe_routing import top_k_sets
from watercolour.policy.linear_attention import as_in_training


SLACK = 1.10
FLOOR = 1e-4


def rollout_inputs(trainer: Any, generations: int) -> dict[str, Any]:
    """The step's prompt, batched and padded the way TRL pads it for `generate`."""
    import torch
    from trl.trainer.utils import pad

    tokenizer = trainer.processing_class
    prompt = trainer.train_dataset[0]["prompt"]
    ids = tokenizer.apply_chat_template(
        prompt, add_generation_prompt=True, tokenize=True, return_dict=False, enable_thinking=False
    )
    rows = [torch.tensor(ids) for _ in range(generations)]
    multiple = trainer.pad_to_multiple_of
    input_ids = pad(rows, padding_value=tokenizer.pad_token_id, padding_side="left", pad_to_multiple_of=multiple)
    mask = pad([torch.ones_like(r) for r in rows], padding_value=0, padding_side="left", pad_to_multiple_of=multiple)
    device = trainer.accelerator.device
    return {"input_ids": input_ids.to(device), "attention_mask": mask.to(device)}


def loss_on(trainer: Any, batch: dict[str, Any]) -> tuple[float, Any]:
    """The GRPO loss of a training micro-batch and the per-token log-probs of its completions."""
    import torch

    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    with torch.no_grad(), as_in_training():
        loss = float(trainer.compute_loss(trainer.model, batch))
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model, ids, mask, batch["completion_ids"].shape[1]
        )
    return loss, logps.float()


@contextmanager
def generating(trainer: Any) -> Iterator[Any]:
    """The policy as the trainer generates with it: train mode (so compiled graphs' guards hold), unwrapped,
    no grad, the embedding hooks that break compilation paused, and the LoRA merged where the plan merges it."""
    import torch
    from trl.models import unwrap_model_for_generation

    from watercolour.policy.generation import input_grad_hooks_paused

    trainer.model.train()
    with (
        unwrap_model_for_generation(
            trainer.model_wrapped,
            trainer.accelerator,
            gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
        ) as model,
        torch.no_grad(),
        input_grad_hooks_paused(trainer.model),
        trainer.rollout_weights(),
    ):
        yield model


def decode(trainer: Any, inputs: dict[str, Any], config: Any) -> tuple[Any, Any]:
    """One rollout batch with `config`: the sampled completion and the decode step's own log-prob of each token,
    taken one position at a time (a stacked copy of the logits would double their memory)."""
    import torch

    with generating(trainer) as model:
        out = model.generate(**inputs, generation_config=config)
    completion = out.sequences[:, inputs["input_ids"].shape[1] :]
    logps = torch.stack(
        [
            torch.log_softmax(logits.float(), dim=-1).gather(1, completion[:, i : i + 1]).squeeze(1)
            for i, logits in enumerate(out.logits)
        ],
        dim=1,
    )
    return completion, logps


def scored(
    trainer: Any, model: Any, ids: Any, mask: Any, length: int, reference: bool, routes: list | None = None
) -> Any:
    """Teacher-forced log-probs of the last `length` tokens, no cache, no compilation; with `reference`, the Gated
    DeltaNet layers take the update's route (transformers' torch reference where routed), else fla where present.
    With `routes` (a list), each MoE router's expert choices are appended to it in call order."""
    import torch

    seen, handles = top_k_sets(model) if routes is not None else ([], [])
    try:
        with torch.no_grad(), as_in_training() if reference else nullcontext():
            logps, _, _ = trainer._get_per_token_logps_and_entropies(
                model, ids, mask, length, batch_size=trainer.args.per_device_train_batch_size
            )
    finally:
        for handle in handles:
            handle.remove()
    if routes is not None:
        routes.extend(seen)
    return logps.float()


def expert_choices(seen: list[Any], routers: int, rows: int, positions: int) -> Any:
    """(routers, rows, positions, top_k) from the hooks' per-call records: chunks of rows, each layer in turn."""
    import torch

    calls = len(seen) // routers
    per_layer = [
        torch.cat([seen[c * routers + layer].view(-1, positions, seen[0].shape[-1]) for c in range(calls)])
        for layer in range(routers)
    ]
    choices = torch.stack(per_layer)
    assert choices.shape[1] == rows, (choices.shape, rows)
    return choices


def routed_as_float32(
    paths: dict[str, list], exact: list, routers: int, rows: int, positions: int, length: int
) -> tuple[dict[str, Any], Any]:
    """Per path, which completion tokens had float32's experts in every MoE layer at the position predicting them
    (rows, length); and their conjunction over the paths."""
    import torch

    reference = expert_choices(exact, routers, rows, positions)
    agree = {
        name: (expert_choices(seen, routers, rows, positions) == reference).all(dim=-1).all(dim=0)
        for name, seen in paths.items()
    }
    # The logits of completion token i come from position positions - length - 1 + i.
    agree = {name: a[:, positions - length - 1 : positions - 1] for name, a in agree.items()}
    return agree, torch.stack(list(agree.values())).all(dim=0)


# The eager decode's budget. It is informational (what compiling the step adds, `eager_decode`), not part of the pass,
# and it decodes at TRL's default speed, 6.5-8x slower than the compiled step: its whole budget on the Qwen3-4B cell
# (16 x 2,048) would take about two minutes, and the check did not finish inside a device call.
EAGER_TOKENS = 512


def logprob_check(trainer: Any, generations: int) -> dict[str, Any]:
    import torch

    batch = trainer._buffered_inputs[0]
    loss_before, logps_before = loss_on(trainer, batch)
    inputs = rollout_inputs(trainer, generations)
    config = copy.deepcopy(trainer.generation_config)
    config.return_dict_in_generate = True
    config.output_logits = True
    completion, fast = decode(trainer, inputs, config)
    # The same decode without compilation, on tokens of its own: what compiling the step adds.
    eager_config = copy.deepcopy(config)
    eager_config.disable_compile = True
    eager_config.max_new_tokens = min(config.max_new_tokens, EAGER_TOKENS)
    eager_completion, eager = decode(trainer, inputs, eager_config)
    eos = torch.tensor(trainer.eos_token_ids, device=completion.device)
    reference = copy.deepcopy(trainer.model).float()  # the float32 reference, scoring tokens the way the loss does

    def teacher_forced(tokens: Any) -> tuple[Any, Any, Any]:
        is_eos = torch.isin(tokens, eos)
        keep = ~((is_eos.cumsum(dim=1) - is_eos.int()) > 0)
        ids = torch.cat([inputs["input_ids"], tokens], dim=1)
        return ids, torch.cat([inputs["attention_mask"], keep.int()], dim=1), keep

    full_ids, full_mask, keep = teacher_forced(completion)
    length = completion.shape[1]
    routers = sum(type(m).__name__.endswith("TopKRouter") for m in trainer.model.modules())
    routes: dict[str, list] = {
        name: [] for name in ("exact", "slow", "attached_fla", "merged_reference", "merged_fla")
    }
    slow = scored(trainer, trainer.model, full_ids, full_mask, length, reference=True, routes=routes["slow"])
    exact_all = scored(trainer, reference, full_ids, full_mask, length, reference=True, routes=routes["exact"])
    exact = exact_all[keep]
    # Each lever of the fast path alone, teacher-forced on the fast path's tokens (so against the same `exact`):
    # the Gated DeltaNet layers through fla's chunked kernel instead of the reference, and the LoRA merged into the
    # bf16 weights (with either kernel). The decode adds fla's recurrent kernel, the cache and (fast) compilation.
    levers = {
        "attached_fla": scored(
            trainer, trainer.model, full_ids, full_mask, length, reference=False, routes=routes["attached_fla"]
        )
    }
    with generating(trainer) as merged:
        for name, route in (("merged_reference", True), ("merged_fla", False)):
            levers[name] = scored(trainer, merged, full_ids, full_mask, length, reference=route, routes=routes[name])
    eager_ids, eager_mask, eager_keep = teacher_forced(eager_completion)
    eager_exact = scored(trainer, reference, eager_ids, eager_mask, eager_completion.shape[1], reference=True)
    del reference
    fast_error = (fast[keep] - exact).abs()
    slow_error = (slow[keep] - exact).abs()
    loss_after, logps_after = loss_on(trainer, batch)
    train_mask = batch["completion_mask"].bool()
    drift = float((logps_after - logps_before).abs()[train_mask].max())
    fast_stats, slow_stats = error_stats(fast_error), error_stats(slow_error)
    routing: dict[str, Any] = {}
    if routers:
        exact_routes = routes.pop("exact")
        rows, positions = full_ids.shape
        agree, stable = routed_as_float32(routes, exact_routes, routers, rows, positions, length)
        stable = stable & keep
        on_stable = {"fast": (fast - exact_all).abs()[stable], "slow": (slow - exact_all).abs()[stable]}
        on_stable |= {name: (logps - exact_all).abs()[stable] for name, logps in levers.items()}
        stable_stats = {name: error_stats(error) for name, error in on_stable.items() if error.numel()}
        routing = {
            "moe_layers": routers,
            "routed_as_fp32_share": {name: round(float(a[keep].float().mean()), 4) for name, a in agree.items()},
            "stable_tokens": int(stable.sum()),
            "stable_vs_fp32": stable_stats,
            "logprobs_pass_stable": bool(stable.any())
            and all(stable_stats["fast"][k] <= SLACK * stable_stats["slow"][k] + FLOOR for k in ("mean", "p99")),
        }
    return {
        "tokens_compared": int(keep.sum()),
        "eager_tokens_compared": int(eager_keep.sum()),
        "mean_logprob": round(float(exact.mean()), 3),
        "fast_vs_fp32": fast_stats,
        "slow_vs_fp32": slow_stats,
        "fast_vs_slow": error_stats((fast[keep] - slow[keep]).abs()),
        "levers_vs_fp32": {
            **{name: error_stats((logps[keep] - exact).abs()) for name, logps in levers.items()},
            "eager_decode": error_stats((eager[eager_keep] - eager_exact[eager_keep]).abs()),
        },
        "logprobs_pass": all(fast_stats[k] <= SLACK * slow_stats[k] + FLOOR for k in ("mean", "p99")),
        **({"routing": routing} if routing else {}),
        "loss_before": loss_before,
        "loss_after": loss_after,
        "train_logprob_max_drift": drift,
        "loss_unchanged": loss_before == loss_after and drift == 0.0,
    }


def error_stats(error: Any) -> dict[str, float]:
    """Mean, 99th percentile and maximum of absolute log-prob errors (sampled down: quantile has a size limit)."""
    sample = error[:: max(1, error.numel() // 1_000_000)]
    return {
        "mean": round(float(error.mean()), 5),
        "p99": round(float(sample.quantile(0.99)), 5),
        "max": round(float(error.max()), 5),
    }
