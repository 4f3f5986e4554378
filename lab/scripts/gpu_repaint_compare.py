"""Single-turn GRPO against repaint GRPO at the same generated-token budget per step (docs/repaint.md, 5b).

Both arms start from the same model and train with the demo's recipe (learning rate, LoRA, offline scoring on real
renders); each is warm-started its own way first (`run_demo`'s compact sketches; the repaint preset's taught
episodes). Tokens are equalised by budget: single-turn generates G rollouts of at most L tokens, repaint G/2
episodes of two paintings of at most L tokens each, so both may generate G x L tokens a step. The repaint budget
`max_completion_length` is 2L plus room for the observation between the paintings (which the policy reads but does
not generate); the tokens each step really generated are measured and reported beside the budget.

The GPU machine has no Chromium of its own: source `lab/scripts/gpu_render_env.sh` first (docs/gpu.md).

    python lab/scripts/gpu_repaint_compare.py --gguf SmolLM2-135M-Instruct.gguf --out DIR --no-trackio
    python lab/scripts/gpu_repaint_compare.py --model MODEL_DIR --out DIR --steps 1 --generations 2 ...  # a local folder

Each arm trains until `--steps` or until its half of `--minutes` is spent (the step in flight finishes). Writes
`DIR/single/` and `DIR/repaint/` (run directories), `DIR/compare.json` (per step: reward, wall time, generated
tokens) and `DIR/compare.svg` (mean reward against steps and against wall time).
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path
from typing import Any


# Room for the observation after the first painting in a repaint episode's budget (~230 SmolLM2 tokens measured).
OBSERVATION_ROOM = 256
ARMS = ("single", "repaint")
COLOURS = {"single": "#3b6ea5", "repaint": "#c0504d"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--gguf", type=Path, help="SmolLM2-135M-Instruct GGUF file (converted once under DIR/model)")
    source.add_argument("--model", type=Path, help="a local model folder instead (a tiny one proves the script)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=12, help="GRPO steps per arm, at most")
    parser.add_argument("--minutes", type=float, default=5.0, help="wall budget for both arms, warm starts included")
    parser.add_argument("--generations", type=int, default=16, help="single-turn rollouts a step (G, even, >= 4)")
    parser.add_argument("--max-tokens", type=int, default=400, help="L: tokens a painting may take")
    parser.add_argument("--warm-examples", type=int, default=24, help="single-turn warm-start examples (0: none)")
    # The repaint preset's twelve: with six, SmolLM2 wrote token soup and never called the tool (docs/repaint.md).
    parser.add_argument("--repaint-examples", type=int, default=12, help="repaint taught episodes (0: none)")
    parser.add_argument("--browsers", type=int, default=4, help="Chromium processes for the renders")
    parser.add_argument("--no-trackio", action="store_true", help="train without trackio (not on the GPU image)")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS), help="which arms to run (default both)")
    args = parser.parse_args()
    if args.generations % 2 or args.generations < 4:
        parser.error("--generations must be even and at least 4: repaint runs half as many episodes (groups of 2+)")

    from watercolour.policy.loading import convert_smollm2

    args.out.mkdir(parents=True, exist_ok=True)
    model = str(args.model) if args.model else str(convert_smollm2(args.out / "model", gguf=args.gguf))
    budget_s = args.minutes * 60 / len(args.arms)
    arms = {arm: run_arm(arm, model, args, budget_s) for arm in args.arms}
    report = {"budget": budget_rule(args), "arms": arms}
    (args.out / "compare.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "compare.svg").write_text(compare_svg(arms))
    print(json.dumps({arm: {k: v for k, v in found.items() if k != "steps"} for arm, found in arms.items()}, indent=2))


def budget_rule(args: argparse.Namespace) -> dict[str, Any]:
    g, tokens = args.generations, args.max_tokens
    return {
        "generated_tokens_per_step": g * tokens,
        "single": {"rollouts": g, "max_completion_length": tokens},
        "repaint": {"episodes": g // 2, "paintings": 2, "max_completion_length": 2 * tokens + OBSERVATION_ROOM},
    }


def overrides(arm: str, model: str, args: argparse.Namespace) -> dict[str, Any]:
    """The arm's run configuration on top of its preset (demo or repaint): same model, same token budget."""
    rule = budget_rule(args)[arm]
    rollouts = rule.get("rollouts", rule.get("episodes"))
    training = {
        "model": model,
        "num_generations": rollouts,
        "per_device_batch_size": rollouts,
        "gradient_accumulation_steps": 1,
        "max_completion_length": rule["max_completion_length"],
        "steps": args.steps,
        "save_steps": args.steps,
        # Both arms generate the same way, TRL's path without compilation: a compiled static cache recompiles for each
        # new length, and repaint's tool loop makes many (prompt + first painting + observation), in a minutes budget.
        "generation": "trl",
    }
    found: dict[str, Any] = {
        "run_dir": str(args.out / arm),
        "training": training,
        "render": {"browsers": args.browsers, "pages_per_browser": 4},
    }
    if arm == "repaint":
        # A painting gets L tokens in either arm: without a turn cap the first could run the episode's budget.
        found["repaint"] = {"warm_start_examples": args.repaint_examples, "turn_tokens": args.max_tokens}
    return found


def run_arm(arm: str, model: str, args: argparse.Namespace, budget_s: float) -> dict[str, Any]:
    """Warm start and GRPO for one arm within `budget_s`; its per-step reward, wall time and generated tokens."""
    import watercolour.training.run as run_module
    import watercolour.training.trainer as trainer_module
    from deployments.presets import load_config
    from watercolour.run_records.run_dir import use_run_environment
    from watercolour.training.warm_start import ADAPTER_DIR, REPORT_FILE, WARMSTART_DIR, warm_start

    started = time.perf_counter()
    run_dir = args.out / arm
    use_run_environment(run_dir)
    steps: dict[int, dict[str, float]] = {}
    build_trainer = run_module.build_trainer

    def measured(config: Any, run_dir: Path, **kw: Any) -> Any:
        from transformers import TrainerCallback

        trainer = build_trainer(config, run_dir, **kw)

        class Budget(TrainerCallback):
            """Records each step's generated tokens; stops the arm when its wall budget is spent."""

            def on_log(self, targs: Any, state: Any, control: Any, logs: dict | None = None, **_: Any) -> None:
                if logs and "completions/mean_length" in logs:
                    rollouts = config.training.num_generations
                    steps[state.global_step] = {"generated_tokens": logs["completions/mean_length"] * rollouts}

            def on_step_end(self, targs: Any, state: Any, control: Any, **_: Any) -> None:
                if time.perf_counter() - started > budget_s:
                    control.should_training_stop = True

        trainer.add_callback(Budget())
        return trainer

    grpo_args = trainer_module.grpo_args

    def without_trackio(config: Any, run_dir: Path) -> Any:
        built = grpo_args(config, run_dir)
        built.report_to = []  # the GPU image has no trackio; the curves are in curves.csv all the same
        return built

    run_module.build_trainer = measured
    if args.no_trackio:
        trainer_module.grpo_args = without_trackio
    try:
        preset = "demo" if arm == "single" else "repaint"
        config = load_config(preset, overrides(arm, model, args))
        if arm == "single" and args.warm_examples:
            warm_start(config, run_dir, examples=args.warm_examples, epochs=2.0, style="compact", neighbours=True)
            adapter = run_dir / WARMSTART_DIR / ADAPTER_DIR
            config = config.model_copy(
                update={"training": config.training.model_copy(update={"start_adapter": adapter})}
            )
        run_module.train(config, echo=True)
    finally:
        run_module.build_trainer, trainer_module.grpo_args = build_trainer, grpo_args
    warm = run_dir / WARMSTART_DIR / REPORT_FILE
    warm_s = json.loads(warm.read_text())["seconds"] if warm.is_file() else 0.0
    return {
        "preset": "demo" if arm == "single" else "repaint",
        "warm_start_s": warm_s,
        "arm_s": round(time.perf_counter() - started, 1),
        "steps": per_step_rows(run_dir, steps),
    }


def per_step_rows(run_dir: Path, steps: dict[int, dict[str, float]]) -> list[dict[str, Any]]:
    """Each step's reward, gate pass rate and times from the arm's `curves.csv`, with the tokens it generated."""
    with open(run_dir / "curves.csv") as file:
        rows = list(csv.DictReader(file))
    wall = 0.0
    per_step = []
    for row in rows:
        wall += float(row["step_s"])
        step = int(row["step"])
        per_step.append(
            {
                "step": step,
                "reward_mean": float(row["reward_mean"]),
                # Empty when no painting of the step reached the gate (an episode that never called the tool).
                "gate_pass_rate": float(row["gate_pass_rate"]) if row["gate_pass_rate"] else None,
                "step_s": round(float(row["step_s"]), 1),
                "wall_s": round(wall, 1),
                "generate_s": round(float(row["generate_s"]), 1),
                "generated_tokens": round(steps.get(step, {}).get("generated_tokens", float("nan"))),
            }
        )
    return per_step


def compare_svg(arms: dict[str, dict[str, Any]]) -> str:
    """Two panels: mean reward against GRPO step, and against wall time of the GRPO steps (seconds)."""
    width, height, left, top, panel = 720, 320, 50, 40, 300
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12"><rect width="100%" height="100%" fill="#fffdf8"/>',
        f'<text x="{left}" y="20">mean reward: single-turn (blue) and repaint (red) GRPO at equal tokens a step</text>',
    ]
    for index, (key, label) in enumerate((("step", "step"), ("wall_s", "wall time of GRPO steps, s"))):
        x0 = left + index * (panel + 60)
        values = [row[key] for arm in arms.values() for row in arm["steps"]] or [1]
        high = max(values) or 1

        def x(value: float, x0: int = x0, high: float = high) -> float:
            return x0 + value / high * panel

        def y(reward: float) -> float:
            return top + (1 - reward) * (height - top - 50)

        parts.append(
            f'<rect x="{x0}" y="{top}" width="{panel}" height="{height - top - 50}" fill="none" stroke="#ccc"/>'
        )
        parts.append(
            f'<text x="{x0 + panel / 2}" y="{height - 15}" text-anchor="middle">{label} (max {high:g})</text>'
        )
        for tick in (0.0, 0.5, 1.0):
            parts.append(f'<text x="{x0 - 5}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
        for arm, found in arms.items():
            points = " ".join(f"{x(row[key]):.1f},{y(row['reward_mean']):.1f}" for row in found["steps"])
            parts.append(f'<polyline points="{points}" fill="none" stroke="{COLOURS[arm]}" stroke-width="2"/>')
            for row in found["steps"]:
                cx, cy = x(row[key]), y(row["reward_mean"])
                parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="{COLOURS[arm]}"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    main()
