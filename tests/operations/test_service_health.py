"""The pre-run health checks: which services a preset calls, and the judge ping through the reward's HTTP client."""

from __future__ import annotations

import pytest

from deployments.presets import load_config
from rewards.judging.settings import JudgeSettings
from tests.servers.loopback import LoopbackServer, Reply, Request
from watercolour.operations.service_health import ServiceDown, ping_judge, services_to_check


def chat_reply(request: Request) -> Reply:
    return Reply(200, {"model": request.body["model"], "choices": [{"message": {"content": "OK"}}]})


def judge_at(url: str) -> JudgeSettings:
    return JudgeSettings(backend="openai", base_url=url, model="vlm-under-test", token_env="WATERCOLOUR_TEST_JUDGE")


def test_only_remote_services_with_weight_are_checked():
    assert services_to_check(load_config("offline")) == []
    assert services_to_check(load_config("hps-only", {"aesthetic.url": "http://scorer"})) == ["scorer"]
    assert services_to_check(load_config("judge-led", {"aesthetic.url": "http://scorer"})) == ["scorer", "judge"]


async def test_the_ping_sends_the_key_from_its_variable_and_returns_the_model(monkeypatch):
    monkeypatch.setenv("WATERCOLOUR_TEST_JUDGE", "sk-test")
    with LoopbackServer(chat_reply) as server:
        assert await ping_judge(judge_at(server.url)) == "vlm-under-test"
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    assert server.requests[0].body["max_tokens"] == 1


async def test_a_refused_key_and_a_dead_port_name_their_fix():
    with LoopbackServer(lambda request: Reply(401, {"error": "bad key"})) as server:
        with pytest.raises(ServiceDown, match=r"refused the key .*WATERCOLOUR_TEST_JUDGE"):
            await ping_judge(judge_at(server.url))
    with pytest.raises(ServiceDown, match="unreachable .*check judge.base_url"):
        await ping_judge(judge_at("http://127.0.0.1:9"))
