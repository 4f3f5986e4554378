"""`pool generate` against loopback writer and critic models: gated renders, revision rounds and provenance."""

from __future__ import annotations

import json

import pytest

from ground.reference_pool import BUNDLED_POOL
from tests.servers.generator import CRITIQUE, critic_server, writer_server
from watercolour.pool.candidates import read_candidates
from watercolour.pool.generate import GenerateSettings, generate, load_photos


def photo_folder(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "hibiscus.png").write_bytes((BUNDLED_POOL / "coral_hibiscus.png").read_bytes())
    rows = [{"file": "hibiscus.png", "licence": "cc-by", "attribution": "A. Photographer"}]
    (folder / "attribution.json").write_text(json.dumps(rows))
    return folder


def test_photos_without_a_licence_are_refused(tmp_path):
    folder = photo_folder(tmp_path)
    (folder / "attribution.json").write_text(json.dumps([{"file": "hibiscus.png", "attribution": "someone"}]))
    with pytest.raises(ValueError, match="lacks a licence"):
        load_photos(folder)


def test_one_endpoint_per_model_or_one_for_all():
    settings = GenerateSettings(endpoints=["http://a", "http://b"], models=["x", "y", "z"])
    with pytest.raises(ValueError, match="one per model"):
        settings.model_endpoints()


@pytest.mark.browser
async def test_generate_gates_each_draft_revises_on_critique_and_keeps_provenance(
    tmp_path, browser_pool, monkeypatch, capsys
):
    monkeypatch.setenv("POOL_TEST_KEY", "secret-token-123")
    out = tmp_path / "candidates"
    with writer_server(prose_every=4) as writer, critic_server() as critic:
        settings = GenerateSettings(
            endpoints=[writer.url + "/v1"],
            models=["org/writer-a", "org/writer-b"],
            per_model=2,
            rounds=1,
            critic_url=critic.url + "/v1",
            critic_model="org/critic",
            token_env="POOL_TEST_KEY",
            timeout_s=30,
            attempts=1,
        )
        made = await generate(settings, out, browser_pool, load_photos(photo_folder(tmp_path)))
    assert all(r.headers["authorization"] == "Bearer secret-token-123" for r in writer.requests)
    assert "secret-token-123" not in capsys.readouterr().out + (out / "candidates.jsonl").read_text()

    on_disk = read_candidates(out)
    assert [c.id for c in on_disk] != [] and {c.id for c in on_disk} == {c.id for c in made}
    firsts = [c for c in on_disk if c.round == 0]
    revisions = [c for c in on_disk if c.round == 1]
    prose = [c for c in firsts if not c.passed]
    assert len(firsts) == 4 and len(prose) == 1 and prose[0].violations == ["no_sketch"] and prose[0].png is None
    # The refused draft has nothing to render or critique, so only the three others were revised.
    assert sorted(c.parent for c in revisions) == sorted(c.id for c in firsts if c.passed)
    assert all(c.critique == CRITIQUE and c.passed for c in revisions), revisions
    for candidate in firsts + revisions:
        assert candidate.photo == "hibiscus.png" and candidate.attribution == "A. Photographer (cc-by)"
        assert candidate.model in settings.models and candidate.endpoint == settings.endpoints[0]
        assert (out / candidate.js).is_file()
    for candidate in on_disk:
        if candidate.passed:
            assert (out / candidate.png).read_bytes()[:4] == b"\x89PNG" and candidate.coverage > 0.01
    # The model saw its own render next to the critique before revising.
    revising = [r for r in writer.requests if len(r.body["messages"]) == 4]
    assert len(revising) == 3 and CRITIQUE in revising[0].body["messages"][3]["content"][0]["text"]
