"""The warm start: its examples are admissible chat answers that fit GRPO's budget; SFT lowers the loss and the
adapter it writes loads back whole, and GRPO starts from it as its trainable LoRA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deployments.presets import load_config
from ground.prompt import SUBJECTS, messages
from ground.reference_pool import load_pool
from rewards.gate import static_check
from tests.models import DATA_DIR, tiny_sketcher
from watercolour.policy.loading import tiny_random_policy
from watercolour.policy.procedural import reply
from watercolour.training.warm_start import POOL_SHARE, REPORT_FILE, build_examples, warm_start


ROOT = Path(__file__).resolve().parents[2]
BUDGET = 1100


@pytest.fixture(scope="module")
def tiny_model():
    return tiny_random_policy(DATA_DIR / "tiny-random-llama")


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def test_examples_are_admissible_chat_answers_that_fit_the_completion_budget(tokenizer):
    rows, from_pool = build_examples(12, "a red poppy", tokenizer, BUDGET, seed=1)
    fitting = sum(len(tokenizer(reply(r.subject, r.sketch))["input_ids"]) < BUDGET for r in load_pool())
    assert len(rows) == 12 and from_pool == min(round(12 * POOL_SHARE), fitting) > 0
    subjects = []
    for row in rows:
        answer = row["completion"][0]["content"]
        assert row["completion"][0]["role"] == "assistant"
        assert static_check(answer).passed
        assert len(tokenizer(answer, add_special_tokens=False)["input_ids"]) < BUDGET
        subject = row["prompt"][1]["content"].removeprefix("Paint ").removesuffix(" in loose watercolour.")
        assert row["prompt"] == messages(subject)
        subjects.append(subject)
    # Half the procedural rows paint the run's own subject; the rest spread over the others.
    assert subjects.count("a red poppy") >= (12 - from_pool) // 2
    assert len(set(subjects)) >= 4


def test_compact_examples_are_procedural_only_and_short(tokenizer):
    rows, from_pool = build_examples(8, "a red poppy", tokenizer, 400, seed=1, style="compact")
    assert len(rows) == 8 and from_pool == 0
    for row in rows:
        answer = row["completion"][0]["content"]
        assert static_check(answer).passed and "const CX" not in answer
        assert len(tokenizer(answer, add_special_tokens=False)["input_ids"]) < 400


def test_with_neighbours_the_compact_examples_paint_the_subject_and_its_neighbours_in_their_colours(tokenizer):
    from ground.palettes import PALETTES
    from rewards.subject_match import neighbours, subject_colours

    rows, _ = build_examples(12, "a peach hibiscus", tokenizer, 400, seed=1, style="compact", neighbours=True)
    taught = {}
    for row in rows:
        subject = row["prompt"][1]["content"].removeprefix("Paint ").removesuffix(" in loose watercolour.")
        taught.setdefault(subject, []).append(row["completion"][0]["content"])
    others = neighbours("a peach hibiscus", SUBJECTS)
    # Half the rows the run's subject, the rest its neighbours in turn (the same flower in other colours).
    assert len(taught.pop("a peach hibiscus")) == 6 and sorted(taught) == sorted(others)
    assert all(len(answers) == 2 for answers in taught.values())
    for subject, answers in taught.items():
        words = subject_colours(subject)
        # Each neighbour is painted in its own palette (the compact white is its grey-violet shadow).
        own = PALETTES[words.petals][1:3] if words.petals != "white" else ("#7d77a8",)
        assert all(any(colour in answer for colour in own) for answer in answers), subject


def test_colour_blind_named_examples_name_only_the_flower_and_paint_four_palettes_in_css_names(tokenizer):
    import re

    from rewards.subject_match import neighbours, subject_colours
    from watercolour.policy.procedural import NAMED_WASHES

    rows, _ = build_examples(
        12, "a peach hibiscus", tokenizer, 400, seed=1, style="named", neighbours=True, colour_blind=True
    )
    painted = []
    for row in rows:
        answer = row["completion"][0]["content"]
        # Neither the prompt nor the reply says which colour: the policy is not taught what "peach" asks for.
        assert row["prompt"][1]["content"] == "Paint a hibiscus in loose watercolour."
        assert answer.startswith("Here is a hibiscus in loose watercolour.")
        assert static_check(answer).passed and "#" not in answer.replace('background("#f7f1e3")', "")
        petals = re.findall(r'brush.fill\("([a-z]+)"', answer)[0]
        painted.append(next(word for word, washes in NAMED_WASHES.items() if petals in washes[:2]))
    # The subject's palette and its three neighbours' (the same flower in other colours) take equal shares.
    words = {subject_colours(subject).petals for subject in neighbours("a peach hibiscus", SUBJECTS)}
    assert sorted(painted) == sorted(["peach", *words] * 3)


def test_a_budget_no_sketch_fits_is_a_clear_error_not_an_endless_search(tokenizer):
    with pytest.raises(ValueError, match="only 0 of 4 full warm-start examples fit max_completion_length=50"):
        build_examples(4, "a red poppy", tokenizer, 50, seed=1)


def test_short_prompt_rows_carry_the_short_system_prompt(tokenizer):
    rows, _ = build_examples(3, "a red poppy", tokenizer, 400, seed=1, style="compact", prompt="short")
    assert all(row["prompt"][1]["content"].startswith("Paint ") for row in rows)
    assert all(row["prompt"][0]["content"] == messages(style="short")[0]["content"] for row in rows)


def test_examples_are_reproducible_from_the_seed(tokenizer):
    assert build_examples(6, "a peach hibiscus", tokenizer, BUDGET, seed=3) == build_examples(
        6, "a peach hibiscus", tokenizer, BUDGET, seed=3
    )


@pytest.fixture(scope="module")
def warm_started(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("warm")
    # The taught tiny policy, not the random one: a random model's tied 0.02-scale embeddings keep its logits
    # near uniform whatever the LoRA does (measured: loss 10.80 -> 10.64 in six steps at lr 0.1).
    config = load_config(
        "offline",
        {"training.model": str(tiny_sketcher()), "training.max_completion_length": BUDGET, "training.lora_r": 8},
    )
    report = warm_start(config, run_dir=run_dir, examples=2, epochs=3, learning_rate=1e-2)
    return config, run_dir, report


@pytest.mark.slow
def test_sft_lowers_the_loss_on_the_examples_it_repeats(warm_started):
    _, run_dir, report = warm_started
    assert report.optimizer_steps == 6 and len(report.losses) == 6
    # The same two examples in the first and the third pass (measured: 17.0 -> 9.7 at the last step).
    assert sum(report.losses[4:]) < sum(report.losses[:2]) - 4.0
    assert json.loads((run_dir / "warmstart" / REPORT_FILE).read_text())["losses"] == report.losses


@pytest.mark.slow
def test_the_adapter_loads_back_with_every_tensor_and_trained_values(warm_started):
    import torch
    from safetensors.torch import load_file

    from watercolour.policy.adapter import load_policy

    _, _, report = warm_started
    model, _ = load_policy(report.adapter_dir)  # raises unless every adapter tensor landed with its value
    saved = load_file(f"{report.adapter_dir}/adapter_model.safetensors")
    assert saved and any(key.endswith("lora_B.weight") for key in saved)
    # LoRA B starts at zero: a trained adapter has moved it.
    assert all(torch.count_nonzero(t) > 0 for key, t in saved.items() if key.endswith("lora_B.weight"))
    assert model.peft_config["default"].r == 8


@pytest.mark.slow
def test_grpo_starts_from_the_warm_start_adapter_as_its_trainable_lora(warm_started, tmp_path):
    import torch
    from safetensors.torch import load_file

    from watercolour.training.trainer import build_trainer

    config, _, report = warm_started
    config = config.model_copy(
        update={"training": config.training.model_copy(update={"start_adapter": report.adapter_dir})}
    )
    trainer = build_trainer(config, tmp_path / "grpo", echo=False)
    trainable = {name: p for name, p in trainer.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in name for name in trainable)
    saved = load_file(f"{report.adapter_dir}/adapter_model.safetensors")
    by_key = {name.replace(".default", ""): p for name, p in trainable.items()}
    assert set(saved) <= set(by_key)
    assert all(torch.equal(by_key[key].detach(), tensor) for key, tensor in saved.items())


@pytest.mark.slow
def test_the_warm_start_a_preset_asks_for_is_made_once_and_reused_from_the_cache(tmp_path, monkeypatch):
    from watercolour.training.warm_start_cache import (
        WARM_STARTS,
        cached_warm_start,
        describe_warm_start,
        warm_start_key,
    )

    monkeypatch.setenv("WATERCOLOUR_CACHE", str(tmp_path / "cache"))
    overrides = {
        "run_dir": str(tmp_path / "run"),
        "training.model": str(tiny_sketcher()),
        "training.max_completion_length": 400,
        "training.lora_r": 8,
        "training.warm_start_examples": 2,
    }
    config = load_config("smoke", overrides)
    adapter, report, reused = cached_warm_start(config)
    assert not reused and report.examples == 2 and report.optimizer_steps == 4  # the demo's two epochs
    assert (adapter / "adapter_config.json").is_file() and report.adapter_dir == str(adapter)
    assert adapter.parent == tmp_path / "cache" / WARM_STARTS / warm_start_key(config)
    # Only the finished warm start is left in the cache: no scratch folder, no SFT trainer output.
    assert [path.name for path in (tmp_path / "cache" / WARM_STARTS).iterdir()] == [adapter.parent.name]
    assert sorted(path.name for path in adapter.parent.iterdir()) == ["adapter", REPORT_FILE]
    assert "made and kept in" in describe_warm_start(adapter, report, reused)

    made = (adapter / "adapter_model.safetensors").stat().st_mtime_ns
    again, report_again, reused_again = cached_warm_start(config)
    assert (again, reused_again) == (adapter, True) and report_again == report
    assert (adapter / "adapter_model.safetensors").stat().st_mtime_ns == made  # not trained again
    assert "reused from" in describe_warm_start(again, report_again, reused_again)
    # Another setting of what the warm start teaches is another warm start; a GRPO-only setting is not.
    more = load_config("smoke", {**overrides, "training.warm_start_examples": 3})
    longer = load_config("smoke", {**overrides, "training.steps": 9, "training.num_generations": 2})
    assert warm_start_key(more) != warm_start_key(config) == warm_start_key(longer)


@pytest.mark.slow
def test_the_train_flows_warm_start_task_makes_it_once_and_says_so(prefect_server, tmp_path, monkeypatch):
    from prefect import flow
    from prefect.settings import PREFECT_API_URL

    from tasks.training import warm_start_policy

    monkeypatch.setenv("WATERCOLOUR_CACHE", str(tmp_path / "cache"))
    config = load_config(
        "smoke",
        {
            "run_dir": str(tmp_path / "run"),
            "training.model": str(tiny_sketcher()),
            "training.max_completion_length": 400,
            "training.lora_r": 8,
            "training.warm_start_examples": 2,
        },
    )

    @flow
    def starts() -> list:
        return [warm_start_policy(config, tmp_path / "run") for _ in range(2)]

    state = starts(return_state=True)
    first, second = state.result()
    adapter = first.training.start_adapter
    assert adapter is not None and (adapter / "adapter_config.json").is_file()
    assert str(adapter).startswith(str(tmp_path / "cache")) and second.training.start_adapter == adapter
    # The run's log, as `scripts/prefect-local.sh logs` prints it (shipped in batches, so it may lag the state).
    run_log = [sys.executable, str(ROOT / "scripts" / "run_log.py"), str(state.state_details.flow_run_id)]
    environment = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()}
    deadline = time.monotonic() + 30
    while True:
        printed = subprocess.run(run_log, env=environment, capture_output=True, text=True, check=True).stdout
        said = [line for line in printed.splitlines() if "| warm start" in line]
        if len([line for line in said if "warm start made" in line or "reused" in line]) == 2:
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert all(line.split(" | ")[2].startswith("warm_start_policy-") for line in said), said
    # Making it says how it goes (a line at least a minute, and at its last step), then what it made; reusing it
    # says so at once.
    made, reused = [line for line in said if "made and kept in" in line], [line for line in said if "reused" in line]
    assert len(made) == 1 and len(reused) == 1, said
    progress = said[: said.index(made[0])]
    assert progress and all("warm start: step" in line for line in progress), said
    assert said.index(reused[0]) == len(said) - 1, said


def test_the_warm_start_is_decided_from_the_configuration_alone(tmp_path):
    from watercolour.training.warm_start_cache import needs_warm_start, warm_started

    assert needs_warm_start(load_config("smoke")) and needs_warm_start(load_config("repaint"))
    given = {"training.start_adapter": str(tmp_path / "adapter")}
    assert not needs_warm_start(load_config("smoke", given)) and not needs_warm_start(load_config("repaint", given))
    afresh = load_config("offline")
    assert not needs_warm_start(afresh) and warm_started(afresh, tmp_path) is afresh
    adapter = load_config("smoke", given)
    assert warm_started(adapter, tmp_path) is adapter
