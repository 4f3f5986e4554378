"""The watercolour scorer service: HPSv3 (or a deterministic stand-in) behind FastAPI, for a Hugging Face Docker Space.

Self-contained on purpose: it runs in its own pinned environment (HPSv3 needs transformers 4.45.2), so it imports
nothing from the watercolour package. Its wire format is documented in README.md and mirrored by the client's
pydantic models in `rewards/aesthetic.py`.

Fixes over the published service: each request writes its images into its own temporary directory (a shared temp
file let one request score another's image), inference is serialised by a lock (one GPU), and scoring is batched.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import os
import tempfile
import threading
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from models import ScoringModel, load_model
from PIL import Image
from pydantic import BaseModel, Field


MAX_BATCH = 32
DEFAULT_PROMPT = "a watercolour painting"


class ScoreRequest(BaseModel):
    images: list[str] = Field(min_length=1, max_length=MAX_BATCH, description="Base64-encoded PNGs.")
    prompt: str = Field(default=DEFAULT_PROMPT, description="Text prompt every image is scored against.")


class ImageScore(BaseModel):
    mu: float
    sigma: float | None
    score: float = Field(description="1 / (1 + exp(-mu / 4)), in 0..1.")


class ScoreResponse(BaseModel):
    scores: list[ImageScore]
    model: str


class Health(BaseModel):
    loaded: bool
    model: str
    error: str | None


class ModelHolder:
    """Loads the model once, in a background thread so /health answers while weights download; one inference at
    a time, because concurrent forward passes on one GPU only contend for memory."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.model: ScoringModel | None = None
        self.error: str | None = None
        self._inference = threading.Lock()

    def load(self) -> None:
        try:
            self.model = load_model(self.name)
        except Exception as error:  # reported by /health and every /score; the Space log has the traceback
            self.error = f"{type(error).__name__}: {error}"
            raise

    def score(self, paths: list[str], prompt: str) -> list[tuple[float, float | None]]:
        assert self.model is not None
        with self._inference:
            return self.model.score(paths, prompt)


@asynccontextmanager
async def lifespan(app: FastAPI):
    # Read at startup, not import: the model is this process's configuration.
    holder = ModelHolder(os.environ.get("WATERCOLOUR_SCORER_MODEL", "hpsv3"))
    app.state.holder = holder
    threading.Thread(target=holder.load, name="model-load", daemon=True).start()
    yield


app = FastAPI(title="watercolour scorer", lifespan=lifespan)


def _unavailable(holder: ModelHolder, status: int, error: str, retry_after: int | None = None) -> JSONResponse:
    headers = {"Retry-After": str(retry_after)} if retry_after else None
    body = {"available": False, "model": holder.name, "error": error}
    return JSONResponse(status_code=status, content=body, headers=headers)


def _decode(index: int, data: str) -> bytes | str:
    """The image bytes, or why they are not an image."""
    try:
        png = base64.b64decode(data, validate=True)
        Image.open(io.BytesIO(png)).verify()
    except (binascii.Error, ValueError, OSError) as error:
        return f"images[{index}] is not a base64-encoded image: {error}"
    return png


@app.get("/health")
def health() -> Health:
    holder: ModelHolder = app.state.holder
    return Health(loaded=holder.model is not None, model=holder.name, error=holder.error)


@app.post("/score", response_model=ScoreResponse)
def score(request: ScoreRequest):
    holder: ModelHolder = app.state.holder
    if holder.error:
        return _unavailable(holder, 503, holder.error)
    if holder.model is None:
        return _unavailable(holder, 503, "the model is still loading", retry_after=10)
    decoded = [_decode(i, data) for i, data in enumerate(request.images)]
    problems = [item for item in decoded if isinstance(item, str)]
    if problems:
        return JSONResponse(status_code=400, content={"detail": problems})
    pngs = [item for item in decoded if isinstance(item, bytes)]
    # HPSv3 reads images from paths: each request gets its own directory, removed when the request ends.
    with tempfile.TemporaryDirectory(prefix="score-") as folder:
        paths = []
        for i, png in enumerate(pngs):
            path = Path(folder) / f"{i}.png"
            path.write_bytes(png)
            paths.append(str(path))
        try:
            results = holder.score(paths, request.prompt)
        except Exception as error:
            return _unavailable(holder, 500, f"inference failed: {type(error).__name__}: {error}")
    if len(results) != len(paths):
        return _unavailable(holder, 500, f"the model returned {len(results)} scores for {len(paths)} images")
    scores = [ImageScore(mu=mu, sigma=sigma, score=1.0 / (1.0 + math.exp(-mu / 4.0))) for mu, sigma in results]
    return ScoreResponse(scores=scores, model=holder.model.name)
