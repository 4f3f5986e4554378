"""Did the run learn? A run's reward trend from its curves, and a before/after sample of base and adapter.

`summarize_run` reads `run_dir/curves.csv`: the first and last steps' reward and gate pass rate, the OLS slope
of the step mean reward on the step index with its t-statistic (t = slope / SE(slope), docs/learning.md), and
the share of groups whose rewards were all equal (no gradient). `evaluate` samples K paintings from the base
policy and from the adapter with the training sampling settings on the same prompts and seeds, scores both with
the scoring engine under the run's configuration and writes a side-by-side gallery.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from statistics import fmean, median
from typing import Any

from ground.records import RewardParts
from ground.run_config import RunConfig
from rewards.scoring.terms import term_names
from watercolour.run_records.curves import LOW_REWARD, number, reward_trend, rewarded_steps


# A slope this many standard errors above zero is read as a rise (about p < 0.05 one-sided for n > 8).
RISE_T = 2.0


@dataclass
class RunSummary:
    """A run's learning in a few numbers (see docs/learning.md for the formula)."""

    steps: int
    first_reward: float
    last_reward: float
    first_gate: float | None
    last_gate: float | None
    slope: float
    slope_se: float
    t: float
    frac_reward_zero_std: float | None
    # The share of the step's paintings in the subject's colours (None for runs logged before it was measured).
    first_on_subject: float | None = None
    last_on_subject: float | None = None

    @property
    def rises(self) -> bool:
        return self.t > RISE_T


def summarize_run(run_dir: Path) -> RunSummary:
    """The learning summary of the run whose curves are in `run_dir/curves.csv`."""
    rows = rewarded_steps(run_dir)
    steps = [float(row["step"]) for row in rows]
    rewards = [float(row["reward_mean"]) for row in rows]
    slope, se, t = reward_trend(steps, rewards)
    zero_std = [value for row in rows if (value := number(row["frac_reward_zero_std"])) is not None]
    return RunSummary(
        steps=len(rows),
        first_reward=rewards[0],
        last_reward=rewards[-1],
        first_gate=number(rows[0]["gate_pass_rate"]),
        last_gate=number(rows[-1]["gate_pass_rate"]),
        slope=slope,
        slope_se=se,
        t=t,
        frac_reward_zero_std=fmean(zero_std) if zero_std else None,
        first_on_subject=number(rows[0].get("on_subject_share")),
        last_on_subject=number(rows[-1].get("on_subject_share")),
    )


def _cell(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def format_summary(summary: RunSummary) -> str:
    """The summary as a small table plus its verdict line."""
    verdict = "rises" if summary.rises else "does not rise clearly"
    return "\n".join(
        [
            f"{'':24} {'first step':>10} {'last step':>10}",
            f"{'mean reward':24} {summary.first_reward:>10.3f} {summary.last_reward:>10.3f}",
            f"{'gate pass rate':24} {_cell(summary.first_gate, '.0%'):>10} {_cell(summary.last_gate, '.0%'):>10}",
            f"{'on-subject share':24} {_cell(summary.first_on_subject, '.0%'):>10} "
            f"{_cell(summary.last_on_subject, '.0%'):>10}",
            f"reward slope {summary.slope:+.4f}/step (SE {summary.slope_se:.4f}, t = {summary.t:.2f}, "
            f"{summary.steps} steps): the reward {verdict}",
            f"frac_reward_zero_std (mean over steps): {_cell(summary.frac_reward_zero_std, '.2f')}",
        ]
    )


@dataclass
class SideStats:
    """One policy's sampled rewards; a rollout whose reward could not be measured (None) is left out."""

    n: int
    mean: float | None
    median: float | None
    share_under_0_3: float | None
    gate_pass_rate: float
    terms: dict[str, float | None]
    # The share of samples whose painting shows the subject's colours (`rewards.subject_match`); None: no subject.
    on_subject: float | None = None


def side_stats(parts: list[RewardParts], subject: str | None = None) -> SideStats:
    """A side's reward distribution and the mean of every registered term (over the rollouts that measured it)."""
    measured = [part.reward for part in parts if part.reward is not None]
    means = {}
    for name in term_names():
        values = [value for part in parts if (value := part.term(name)) is not None]
        means[name] = fmean(values) if values else None
    return SideStats(
        n=len(parts),
        mean=fmean(measured) if measured else None,
        median=median(measured) if measured else None,
        share_under_0_3=fmean(float(r < LOW_REWARD) for r in measured) if measured else None,
        gate_pass_rate=fmean(part.term("gate") or 0.0 for part in parts) if parts else 0.0,
        terms=means,
        on_subject=fmean(map(float, map(partial(_on_subject, subject=subject), parts))) if subject and parts else None,
    )


def _on_subject(part: RewardParts, subject: str) -> bool:
    from rewards.subject_match import subject_match

    render = part.verdict.render if part.verdict is not None else None
    return render is not None and render.png is not None and subject_match(render.png, subject).on_subject


def sample(model: Any, tokenizer: Any, subject: str, n: int, config: RunConfig, seed: int) -> list[str]:
    """n completions of the painting prompt with the training sampling settings, reproducible from `seed`."""
    import torch

    from ground.prompt import messages

    training = config.training
    inputs = tokenizer.apply_chat_template(
        messages(subject, training.prompt), add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    torch.manual_seed(seed)
    with torch.no_grad():
        output = model.generate(
            **inputs,
            do_sample=True,
            temperature=training.temperature,
            top_p=training.top_p,
            top_k=training.top_k,
            max_new_tokens=training.max_completion_length,
            num_return_sequences=n,
            pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
        )
    prompt_length = inputs["input_ids"].shape[1]
    return tokenizer.batch_decode(output[:, prompt_length:], skip_special_tokens=True)


def evaluate(
    adapter_dir: Path,
    n: int,
    config: RunConfig,
    out_dir: Path,
    base: bool = True,
    seed: int = 0,
    against: Path | None = None,
) -> dict:
    """Sample, score and compare the base policy (or the `against` adapter) and the adapter; writes
    evaluation.json and a gallery. Every side samples the same prompt with the same sampling seed."""
    import torch

    from rewards.scoring.scoring_engine import ScoringEngine
    from watercolour.policy.adapter import load_policy
    from watercolour.policy.loading import set_cpu_threads

    if not torch.cuda.is_available():
        set_cpu_threads()
    out_dir = Path(out_dir)
    model, tokenizer = load_policy(Path(adapter_dir))
    model.eval()
    subject = config.training.subject
    samples = {"adapter": sample(model, tokenizer, subject, n, config, seed)}
    if against is not None:
        # Another adapter on the same base, e.g. the warm start against the run's final adapter.
        other, other_tokenizer = load_policy(Path(against))
        other.eval()
        samples = {"against": sample(other, other_tokenizer, subject, n, config, seed), **samples}
    elif base:
        # The same weights with the LoRA switched off: the base policy, on the same prompt and sampling seed.
        with model.disable_adapter():
            samples = {"base": sample(model, tokenizer, subject, n, config, seed), **samples}
    engine = ScoringEngine(config.scoring, out_dir)

    async def score_all() -> dict[str, list[RewardParts]]:
        try:
            # Sample i of each side faces the same judge references (one group seed per index).
            return {side: await engine.score(texts, list(range(n)), None) for side, texts in samples.items()}
        finally:
            await engine.aclose()

    scored = asyncio.run(score_all())
    report = {
        "adapter": str(adapter_dir),
        "against": str(against) if against is not None else None,
        "subject": subject,
        "n": n,
        "seed": seed,
        "sampling": config.training.model_dump(include={"temperature", "top_p", "top_k", "max_completion_length"}),
        "backends": scored["adapter"][0].backends if scored["adapter"] else {},
        "sides": {side: asdict(side_stats(parts, subject)) for side, parts in scored.items()},
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "evaluation.json").write_text(json.dumps(report, indent=2) + "\n")
    report["gallery"] = str(_gallery(samples, scored, out_dir, subject))
    return report


def _gallery(samples: dict[str, list[str]], scored: dict[str, list], out_dir: Path, subject: str) -> Path:
    from watercolour.run_records.gallery import GalleryItem, write_gallery

    items = []
    for index in range(len(samples["adapter"])):
        for side in samples:
            parts = scored[side][index]
            verdict = parts.verdict
            image = ""
            if verdict is not None and verdict.render is not None and verdict.render.png is not None:
                image = f"{side}_{index:03d}.png"
                (out_dir / image).write_bytes(verdict.render.png)
            items.append(
                GalleryItem(
                    image=image,
                    title=f"{side} #{index}",
                    sketch=(verdict.sketch if verdict is not None else None) or samples[side][index],
                    reward=parts.reward,
                    parts=dict(parts.terms),
                    preset=side,
                    violations=verdict.violations if verdict is not None else ["dead letter"],
                )
            )
    return write_gallery(items, out_dir, title=f"{subject}: {' and '.join(samples)}, side by side")


def format_evaluation(report: dict) -> str:
    """Before/after table of the reward distribution."""
    sides = report["sides"]
    names = list(sides)
    lines = [f"{'':18}" + "".join(f"{name:>10}" for name in names) + ("     shift" if len(names) == 2 else "")]
    for key, label, spec in (
        ("mean", "mean reward", ".3f"),
        ("median", "median reward", ".3f"),
        ("share_under_0_3", "share under 0.3", ".0%"),
        ("gate_pass_rate", "gate pass rate", ".0%"),
        ("on_subject", "on-subject share", ".0%"),
    ):
        values = [sides[name].get(key) for name in names]
        row = f"{label:18}" + "".join(f"{_cell(value, spec):>10}" for value in values)
        if len(values) == 2 and None not in values:
            row += f"{values[1] - values[0]:>+10{spec}}"
        lines.append(row)
    for name in term_names():
        values = [sides[side]["terms"].get(name) for side in names]
        lines.append(f"{name + ' mean':18}" + "".join(f"{_cell(value):>10}" for value in values))
    return "\n".join(lines)
