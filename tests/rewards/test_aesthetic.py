"""Aesthetic scorers: the offline stand-in's ranking, and the HPSv3 client's retry policy against loopback servers."""

from __future__ import annotations

import asyncio
import base64
import math
import pickle
import time

import pytest

from rewards.aesthetic import AestheticSettings, HPSv3Scorer, hps_score, make_scorer
from rewards.errors import ServiceUnavailable
from tests.servers.images import blank, flat_blob, layered_wash, solid, width_of
from tests.servers.loopback import LoopbackServer, Reply, Request, failing_first, free_port


FAST = {"attempts": 3, "backoff_s": 0.01, "timeout_s": 2.0}


def width_scores(request: Request) -> Reply:
    """A well-behaved scorer: mu is the image's width / 10, so tests can check order."""
    mus = [width_of(base64.b64decode(image)) / 10 for image in request.body["images"]]
    return Reply(200, {"scores": [{"mu": mu, "sigma": 1.0, "score": hps_score(mu)} for mu in mus], "model": "fake"})


def hpsv3(url: str, **overrides) -> HPSv3Scorer:
    return HPSv3Scorer(AestheticSettings(backend="hpsv3", url=url, **{**FAST, **overrides}))


# --- offline stand-in ---


async def test_offline_scorer_ranks_blank_below_blob_below_layered_wash():
    scorer = make_scorer(AestheticSettings())
    empty, blob, wash = await scorer.score([blank(), flat_blob(), layered_wash()])
    assert empty.score == 0.0
    assert blob.score < wash.score
    assert 0.0 <= blob.score <= 1.0 and 0.0 <= wash.score <= 1.0


async def test_offline_scorer_is_deterministic_and_named_offline():
    scorer = make_scorer(AestheticSettings())
    first = await scorer.score([layered_wash(seed=3)])
    again = await pickle.loads(pickle.dumps(scorer)).score([layered_wash(seed=3)])
    assert first == again
    assert "offline" in scorer.backend_id and first[0].backend == scorer.backend_id


def test_settings_pickle_and_hpsv3_needs_a_url():
    settings = AestheticSettings(backend="hpsv3", url="http://127.0.0.1:1", prompt="a wash")
    assert pickle.loads(pickle.dumps(settings)) == settings
    with pytest.raises(ValueError, match="aesthetic.url"):
        make_scorer(AestheticSettings(backend="hpsv3"))


def test_score_is_the_logistic_of_mu_over_four():
    assert hps_score(0.0) == 0.5
    assert math.isclose(hps_score(-9.98), 0.0763, abs_tol=1e-3)
    assert math.isclose(hps_score(6.62), 0.840, abs_tol=1e-3)


# --- HPSv3 client ---


async def test_hpsv3_client_batches_and_keeps_order():
    with LoopbackServer(width_scores) as server:
        scorer = hpsv3(server.url, batch_size=3)
        scores = await scorer.score([solid(w) for w in (50, 10, 70, 30, 20, 60, 40)])
        await scorer.aclose()
    assert [s.raw for s in scores] == [5.0, 1.0, 7.0, 3.0, 2.0, 6.0, 4.0]
    assert sorted(len(r.body["images"]) for r in server.requests) == [1, 3, 3]  # batches travel concurrently
    assert all(r.body["prompt"] == "a loose watercolour flower" for r in server.requests)
    assert scores[0].backend.startswith("hpsv3")


async def test_hpsv3_client_retries_a_503():
    with LoopbackServer(failing_first(2, Reply(503, {"error": "busy"}), width_scores)) as server:
        scores = await hpsv3(server.url).score([solid(20)])
    assert scores[0].raw == 2.0 and len(server.requests) == 3


async def test_hpsv3_client_honours_retry_after_on_429():
    with LoopbackServer(failing_first(1, Reply(429, {}, {"Retry-After": "1"}), width_scores)) as server:
        started = time.monotonic()
        scores = await hpsv3(server.url).score([solid(20)])
    assert time.monotonic() - started >= 0.95
    assert scores[0].raw == 2.0


async def test_hpsv3_client_fails_fast_when_the_service_is_down():
    port = free_port()  # nothing listens on it
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable) as failure:
        await hpsv3(f"http://127.0.0.1:{port}", attempts=2).score([solid(20)])
    assert time.monotonic() - started < 3.0
    assert failure.value.stage == "aesthetic" and failure.value.attempts == 2


@pytest.mark.parametrize(
    "body",
    [
        "this is not json",
        {"scores": [], "model": "fake"},
        {"scores": [{"sigma": 1.0, "score": 0.5}], "model": "fake"},
        {"scores": [{"mu": 1.0, "sigma": None, "score": 0.5}], "model": "fake", "available": False},
    ],
    ids=["not-json", "wrong-count", "missing-mu", "unavailable"],
)
async def test_hpsv3_client_treats_a_malformed_reply_as_unavailable_never_zero(body):
    with LoopbackServer(lambda request: Reply(200, body)) as server:
        with pytest.raises(ServiceUnavailable, match="malformed") as failure:
            await hpsv3(server.url).score([solid(20)])
    assert failure.value.attempts == 3 and len(server.requests) == 3


async def test_hpsv3_client_does_not_retry_a_client_error():
    with LoopbackServer(lambda request: Reply(401, {"error": "bad token"})) as server:
        with pytest.raises(ServiceUnavailable, match="401"):
            await hpsv3(server.url).score([solid(20)])
    assert len(server.requests) == 1


async def test_hpsv3_client_times_out_a_stalled_service():
    def stall(request: Request) -> Reply:
        time.sleep(0.5)
        return width_scores(request)

    with LoopbackServer(stall) as server:
        with pytest.raises(ServiceUnavailable, match="Timeout"):
            await hpsv3(server.url, timeout_s=0.1, attempts=2).score([solid(20)])


async def test_hpsv3_client_sends_the_token_but_never_shows_it(monkeypatch):
    secret = "hf_not_a_real_token_123"
    monkeypatch.setenv("WATERCOLOUR_TEST_TOKEN", secret)
    with LoopbackServer(lambda request: Reply(500, {"error": "boom"})) as server:
        scorer = hpsv3(server.url, token_env="WATERCOLOUR_TEST_TOKEN", attempts=1)
        with pytest.raises(ServiceUnavailable) as failure:
            await scorer.score([solid(20)])
        shipped = pickle.dumps(scorer)
    assert server.requests[0].headers["authorization"] == f"Bearer {secret}"
    assert secret not in str(failure.value) and secret not in repr(scorer)
    assert secret.encode() not in shipped


async def test_hpsv3_client_pickles_and_rebinds_on_a_new_event_loop():
    with LoopbackServer(width_scores) as server:
        scorer = hpsv3(server.url)
        await scorer.score([solid(10)])
        clone = pickle.loads(pickle.dumps(scorer))
        # TRL and Prefect run rewards on other loops and in other processes: the clone builds its own client there.
        scores = await asyncio.to_thread(asyncio.run, clone.score([solid(30)]))
        await scorer.aclose()
    assert scores[0].raw == 3.0


BLANK_SKETCH = """
function setup() {
  createCanvas(600, 600, WEBGL);
  noLoop();
}
function draw() {
  background("#f6f0e4");
}
"""


@pytest.mark.browser
async def test_offline_scorer_ranks_a_real_render_above_a_blank_canvas(browser_pool, flower_sketch):
    flower, empty = [await browser_pool.render(source, seed=0) for source in (flower_sketch, BLANK_SKETCH)]
    assert flower.png is not None and empty.png is not None
    scores = await make_scorer(AestheticSettings()).score([empty.png, flower.png])
    assert scores[0].score < scores[1].score
