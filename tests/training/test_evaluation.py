"""Learning summaries from curves.csv (checked against a hand calculation) and the base-vs-adapter evaluation."""

from __future__ import annotations

import json
import math

import pytest

from deployments.presets import load_config
from tests.models import tiny_sketcher
from watercolour.run_records.curves import CurvesFile, columns, reward_trend
from watercolour.training.evaluation import evaluate, format_evaluation, format_summary, summarize_run


def write_curves(run_dir, rewards, gates=None, zero_std=None, on_subject=None):
    curves = CurvesFile(run_dir)
    for index, reward in enumerate(rewards):
        row = dict.fromkeys(columns())
        row.update(step=index + 1, reward_mean=reward)
        row["gate_pass_rate"] = gates[index] if gates else None
        row["frac_reward_zero_std"] = zero_std[index] if zero_std else None
        row["on_subject_share"] = on_subject[index] if on_subject else None
        curves.append(row)


def test_summary_of_a_rising_run_matches_the_hand_calculation(tmp_path):
    write_curves(
        tmp_path,
        [0.10, 0.18, 0.22, 0.31, 0.35],
        gates=[0.25, 0.5, 0.5, 0.75, 1.0],
        zero_std=[1.0, 0.0, 0.0, 0.0, 0.0],
        on_subject=[0.25, 0.5, 0.5, 0.75, 0.875],
    )
    summary = summarize_run(tmp_path)
    # By hand: mean step 3, mean reward 0.232, Sxx = 10, Sxy = 0.63 -> slope 0.063, intercept 0.043;
    # residuals -0.006, 0.011, -0.012, 0.015, -0.008 -> SSR 0.00059, SE = sqrt(0.00059 / 3 / 10) = 0.0044347.
    assert summary.slope == pytest.approx(0.063)
    assert summary.slope_se == pytest.approx(math.sqrt(0.00059 / 30))
    assert summary.t == pytest.approx(14.2063, abs=1e-3)
    assert summary.rises
    assert (summary.first_reward, summary.last_reward) == (0.10, 0.35)
    assert (summary.first_gate, summary.last_gate) == (0.25, 1.0)
    assert summary.frac_reward_zero_std == pytest.approx(0.2)
    assert (summary.first_on_subject, summary.last_on_subject) == (0.25, 0.875)
    table = format_summary(summary)
    assert "t = 14.21" in table and "+0.0630/step" in table and "rises" in table
    assert "on-subject share" in table and "25%" in table and "88%" in table


def test_a_flat_noisy_run_does_not_count_as_rising(tmp_path):
    write_curves(tmp_path, [0.30, 0.25, 0.33, 0.27, 0.31, 0.26])
    summary = summarize_run(tmp_path)
    assert abs(summary.t) < 1 and not summary.rises
    assert summary.first_gate is None and summary.frac_reward_zero_std is None
    assert "does not rise" in format_summary(summary)


def test_trend_needs_three_steps_and_a_perfect_line_has_infinite_t(tmp_path):
    with pytest.raises(ValueError, match="at least 3 steps"):
        reward_trend([1, 2], [0.1, 0.2])
    assert reward_trend([1, 2, 3], [0.25, 0.5, 0.75])[2] == math.inf
    with pytest.raises(ValueError, match="no steps with a reward"):
        summarize_run(tmp_path)


@pytest.fixture(scope="module")
def zero_adapter(tmp_path_factory):
    """A LoRA adapter on the taught tiny policy with B = 0 (as initialised): the same function as its base."""
    import torch
    from peft import get_peft_model

    from watercolour.policy.adapter import load_base
    from watercolour.policy.lora import lora_config

    torch.manual_seed(0)
    base = str(tiny_sketcher())
    config = load_config("offline", {"training.model": base, "training.max_completion_length": 600})
    model = get_peft_model(load_base(base), lora_config(config.training))
    adapter = tmp_path_factory.mktemp("adapter") / "adapter"
    model.save_pretrained(adapter)  # PEFT's own config names the base folder
    return config, adapter


@pytest.mark.browser
@pytest.mark.slow
def test_evaluate_samples_both_policies_on_the_same_seeds_scores_them_and_writes_a_gallery(zero_adapter, tmp_path):
    config, adapter = zero_adapter
    report = evaluate(adapter, n=2, config=config, out_dir=tmp_path, base=True, seed=3)
    base, tuned = report["sides"]["base"], report["sides"]["adapter"]
    assert base["n"] == tuned["n"] == 2
    # A zero adapter on the same prompt and seed samples the same text, so the two sides score alike.
    assert base == tuned
    assert report["backends"]["aesthetic"].startswith("offline")
    assert json.loads((tmp_path / "evaluation.json").read_text())["sides"] == report["sides"]
    page = (tmp_path / "index.html").read_text()
    assert "base #0" in page and "adapter #1" in page
    if tuned["gate_pass_rate"] > 0:
        assert (tmp_path / "adapter_000.png").exists() or (tmp_path / "adapter_001.png").exists()
    table = format_evaluation(report)
    assert "gate pass rate" in table and "shift" in table


@pytest.mark.browser
@pytest.mark.slow
def test_evaluate_against_another_adapter_samples_it_instead_of_the_base(zero_adapter, tmp_path):
    config, adapter = zero_adapter
    report = evaluate(adapter, n=1, config=config, out_dir=tmp_path, seed=3, against=adapter)
    assert list(report["sides"]) == ["against", "adapter"] and report["against"] == str(adapter)
    # The same adapter on both sides, same prompt and seed: the same samples, the same scores.
    assert report["sides"]["against"] == report["sides"]["adapter"]
    assert "against #0" in (tmp_path / "index.html").read_text()


def test_first_and_last_are_steps_not_file_order(tmp_path):
    curves = CurvesFile(tmp_path)
    for step, reward in ((2, 0.4), (1, 0.2), (3, 0.5)):
        row = dict.fromkeys(columns())
        row.update(step=step, reward_mean=reward)
        curves.append(row)
    summary = summarize_run(tmp_path)
    assert (summary.first_reward, summary.last_reward) == (0.2, 0.5)
