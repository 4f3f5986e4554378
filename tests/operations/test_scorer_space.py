"""The scorer service, run for real under uvicorn on 127.0.0.1 with the stand-in model, and our client against it."""

from __future__ import annotations

import asyncio
import base64
import math
from collections.abc import Iterator

import httpx
import pytest

from rewards.aesthetic import AestheticSettings, HPSv3Scorer, hps_score
from rewards.errors import ServiceUnavailable
from tests.servers.images import blank, layered_wash, solid
from tests.servers.scorer_space import serve_scorer_space


@pytest.fixture(scope="module")
def space() -> Iterator[str]:
    with serve_scorer_space("standin") as running:
        yield running.url


def b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def test_health_reports_the_loaded_stand_in(space):
    assert httpx.get(space + "/health").json() == {"loaded": True, "model": "standin", "error": None}


def test_score_returns_one_score_per_image_in_order(space):
    images = [blank(), layered_wash(), solid(64)]
    reply = httpx.post(space + "/score", json={"images": [b64(p) for p in images], "prompt": "a wash"}).json()
    assert reply["model"] == "standin-image-stats-v1" and len(reply["scores"]) == 3
    assert reply["scores"][0]["mu"] == -10.0  # the stand-in puts a blank page where HPSv3 does
    assert reply["scores"][1]["mu"] > reply["scores"][0]["mu"]
    for item in reply["scores"]:
        assert math.isclose(item["score"], 1 / (1 + math.exp(-item["mu"] / 4)))


def test_bad_requests_are_refused_not_scored(space):
    assert httpx.post(space + "/score", json={"images": ["not base64!"]}).status_code == 400
    assert httpx.post(space + "/score", json={"images": [b64(b"not a png")]}).status_code == 400
    assert httpx.post(space + "/score", json={"images": []}).status_code == 422
    assert httpx.post(space + "/score", json={"images": [b64(blank())] * 33}).status_code == 422


async def test_concurrent_requests_each_get_their_own_image_scored(space):
    # The published service wrote every request to one temp file, so overlapping requests scored each other's image.
    images = [layered_wash(seed=seed) for seed in range(12)]
    async with httpx.AsyncClient(base_url=space, timeout=30) as client:
        alone = [(await client.post("/score", json={"images": [b64(p)]})).json()["scores"][0]["mu"] for p in images]
        replies = await asyncio.gather(*(client.post("/score", json={"images": [b64(p)]}) for p in images))
    together = [reply.json()["scores"][0]["mu"] for reply in replies]
    assert len(set(alone)) == len(images)  # distinct images, distinct scores: a mix-up could not hide
    assert together == alone


async def test_the_hpsv3_client_scores_batches_through_the_real_app_in_order(space):
    images = [solid(width) for width in (40, 200, 80, 120, 160)] + [blank()]
    scorer = HPSv3Scorer(AestheticSettings(backend="hpsv3", url=space + "/", batch_size=2, attempts=2, backoff_s=0.01))
    scores = await scorer.score(images)
    await scorer.aclose()
    reply = httpx.post(space + "/score", json={"images": [b64(p) for p in images], "prompt": "x"}).json()
    assert [s.raw for s in scores] == [item["mu"] for item in reply["scores"]]
    assert all(math.isclose(s.score, hps_score(s.raw)) for s in scores if s.raw is not None)


async def test_a_model_that_failed_to_load_is_unavailable_to_the_client():
    with serve_scorer_space("no-such-model") as running:
        url = running.url
        health = httpx.get(url + "/health").json()
        assert not health["loaded"] and "no-such-model" in health["error"]
        scorer = HPSv3Scorer(AestheticSettings(backend="hpsv3", url=url, attempts=2, backoff_s=0.01))
        with pytest.raises(ServiceUnavailable, match="503"):
            await scorer.score([blank()])
