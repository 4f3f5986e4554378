"""The GPU benchmark's code path on CPU with a tiny shape: trainer steps on both paths, the table, the checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.gpu import shapes
from bench.gpu.__main__ import main


TINY = dict(
    model_type="llama",
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    vocab_size=1024,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
)


@pytest.mark.timeout(600)
def test_bench_runs_both_paths_and_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(shapes.SHAPES, "tiny", TINY)
    main(["--shapes", "tiny", "--generations", "2", "--max-len", "3", "--micro-batch", "1", "--fast-steps", "2"])
    rows = [json.loads(line) for line in (Path("bench-gpu-out") / "bench_gpu.jsonl").read_text().splitlines()]
    steps = [row for row in rows if "step" in row]
    assert [(row["path"], row["step"]) for row in steps] == [("default", 1), ("fast", 1), ("fast", 2)]
    assert all(row["tokens"] == 2 * 3 and row["generate_s"] > 0 for row in steps)
    check = next(row["check"] for row in rows if "check" in row)
    # On CPU the "fast" path resolves to the default one, so decode and full forward agree to float32 rounding.
    assert check["tokens_compared"] == 2 * 3
    assert check["logprobs_pass"] and check["loss_unchanged"]
    table = (Path("bench-gpu-out") / "bench_gpu.md").read_text()
    assert "| tiny | 2 x 3 | fast | 2 |" in table and "x |" in table


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
