"""Scoring models the service can load, chosen by name: the real HPSv3, or the deterministic stand-in for tests."""

from __future__ import annotations

from typing import Protocol


class ScoringModel(Protocol):
    name: str

    def score(self, paths: list[str], prompt: str) -> list[tuple[float, float | None]]:
        """(mu, sigma) per image path, in order."""
        ...


class HPSv3Model:
    """HPSv3 1.0.0 (Qwen2-VL-7B preference model) on CUDA. Downloads ~17 GB of weights into HF_HOME on first load."""

    name = "hpsv3-1.0.0"

    def __init__(self) -> None:
        # Heavy imports here, so the stand-in and /health never pay for them.
        import torch
        from hpsv3 import HPSv3RewardInferencer

        self._torch = torch
        # CUDA on purpose: a 7B reward model on CPU would time out every request rather than fail once, visibly.
        self._inferencer = HPSv3RewardInferencer(device="cuda")

    def score(self, paths: list[str], prompt: str) -> list[tuple[float, float | None]]:
        # The package signature is reward(image_paths, prompts); its gradio demo swaps them. Logits are [N, 2].
        with self._torch.inference_mode():
            logits = self._inferencer.reward(paths, [prompt] * len(paths))
        return [(float(row[0]), float(row[1])) for row in logits.float().cpu().tolist()]


def load_model(name: str) -> ScoringModel:
    if name == "hpsv3":
        return HPSv3Model()
    if name == "standin":
        from standin import StandInModel

        return StandInModel()
    raise ValueError(f"unknown WATERCOLOUR_SCORER_MODEL {name!r}: use 'hpsv3' or 'standin'")
