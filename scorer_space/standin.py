"""A deterministic STAND-IN for HPSv3: image statistics mapped onto HPSv3's mu scale. For tests, never for training.

A blank page lands near -10 (where HPSv3 put a blank canvas); paint coverage and tonal variety raise it to about +8.
It reads images from paths, exactly as HPSv3 does, so the service's file handling is what the tests exercise.
"""

from __future__ import annotations

import numpy as np
from PIL import Image


class StandInModel:
    name = "standin-image-stats-v1"

    def score(self, paths: list[str], prompt: str) -> list[tuple[float, float | None]]:
        return [(self.mu(path), None) for path in paths]

    @staticmethod
    def mu(path: str) -> float:
        with Image.open(path) as image:
            grey = np.asarray(image.convert("L").resize((64, 64), Image.Resampling.BOX), dtype=np.float64)
        paper = grey.max()
        ink = grey < paper - 16
        coverage = float(ink.mean())
        variety = float(grey[ink].std() / 64.0) if ink.any() else 0.0
        return -10.0 + 12.0 * min(coverage / 0.2, 1.0) + 6.0 * min(variety, 1.0)
