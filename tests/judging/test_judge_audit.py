"""The judge audit: it must pass an honest judge and catch judges broken in known ways."""

from __future__ import annotations

import hashlib
import json
import random
import shutil

import pytest

from ground.reference_pool import BUNDLED_POOL, load_pool
from rewards.judging.judge import make_judge
from rewards.judging.settings import JudgeSettings
from tests.servers.openai_compat import openai_compat_server, verdict
from watercolour.cli import main
from watercolour.judge_trust.judge_audit import (
    AlwaysFirstJudge,
    AuditSettings,
    CoinFlipJudge,
    Picture,
    audit,
    audit_judge,
    run_paintings,
)


POOL = load_pool()
REFERENCES = [Picture(r.name, r.png, r.tier) for r in POOL]
# Six paintings, three of each tier, keep the HTTP tests to a few dozen requests of two PNGs each.
FEW = [p for p in REFERENCES if p.tier == "love"][:3] + [p for p in REFERENCES if p.tier == "okay"][:3]
SMALL = AuditSettings(pairs=8, triads=6, tier_pairs=6, challengers=2)


class CyclicJudge:
    """Planted: rock-paper-scissors over three classes of picture, so decided triads of three classes are cycles."""

    backend_id = "planted-cyclic"

    def prepare_rollout(self, png: bytes) -> bytes:
        return png

    async def compare(self, png_a: bytes, png_b: bytes) -> str | None:
        a, b = (int(hashlib.sha256(png).hexdigest(), 16) % 3 for png in (png_a, png_b))
        if a == b:
            return "A" if png_a < png_b else "B"
        return "A" if (a - b) % 3 == 1 else "B"


async def test_the_offline_judge_is_consistent_unbiased_and_transitive():
    judge = make_judge(JudgeSettings(backend="offline"), POOL)
    report = await audit_judge(judge, REFERENCES, [], AuditSettings())
    assert report.position_bias.value == 0.0 and report.position_bias.n == 24
    assert report.self_consistency.value == 1.0
    assert report.transitivity_violations.value == 0.0 and report.transitivity_violations.n > 0
    assert report.flags == []
    assert len(report.difficulty) == len(POOL) and all(d.comparisons == 4 for d in report.difficulty)


async def test_a_judge_that_always_answers_a_over_http_is_flagged_for_position_bias():
    with openai_compat_server(lambda a, b: verdict("A")) as server:
        settings = JudgeSettings(backend="openai", base_url=server.url + "/v1", attempts=2, backoff_s=0.01)
        judge = make_judge(settings, POOL)
        try:
            report = await audit_judge(judge, FEW, [], SMALL)
        finally:
            await judge.aclose()
    assert report.position_bias.value == 1.0
    assert report.first_position_share.value == 1.0
    assert len(server.requests) == report.questions
    assert any(flag.startswith("position bias") for flag in report.flags)
    assert "prefers the image shown first (A)" in report.flags


async def test_a_judge_answering_at_random_over_http_is_flagged_as_inconsistent():
    rng = random.Random(3)
    with openai_compat_server(lambda a, b: verdict(rng.choice("AB"))) as server:
        settings = JudgeSettings(backend="openai", base_url=server.url + "/v1", attempts=2, backoff_s=0.01)
        judge = make_judge(settings, POOL)
        try:
            report = await audit_judge(judge, FEW, [], AuditSettings(pairs=15, triads=0, tier_pairs=0, challengers=0))
        finally:
            await judge.aclose()
    assert report.self_consistency.value is not None and report.self_consistency.value < 0.9
    assert any(flag.startswith("inconsistent") for flag in report.flags)


@pytest.mark.parametrize("seed", range(5))
async def test_the_planted_coin_flip_is_caught_whatever_the_seed(seed):
    report = await audit_judge(CoinFlipJudge(seed), REFERENCES, [], AuditSettings(seed=seed))
    assert any(flag.startswith(("inconsistent", "position bias")) for flag in report.flags)


async def test_a_cyclic_judge_is_flagged_as_intransitive():
    report = await audit_judge(CyclicJudge(), REFERENCES, [], AuditSettings(triads=60))
    assert report.self_consistency.value == 1.0 and report.position_bias.value == 0.0
    assert report.transitivity_violations.value is not None and report.transitivity_violations.value > 0.1
    assert any(flag.startswith("intransitive") for flag in report.flags)


async def test_the_report_runs_both_controls_on_the_same_questions():
    report = await audit(AlwaysFirstJudge(), REFERENCES, [], SMALL)
    assert [c.backend for c in report.controls] == ["planted-always-a", "planted-coin-flip"]
    assert report.audited.questions == report.controls[0].questions == report.controls[1].questions


async def test_a_runs_rollouts_are_the_challengers_of_each_reference(tmp_path):
    folder = tmp_path / "rollouts" / "png" / "1"
    folder.mkdir(parents=True)
    for index, reference in enumerate(POOL[:3]):
        shutil.copy(BUNDLED_POOL / f"{reference.name}.png", folder / f"0_{index}.png")
    rollouts = run_paintings(tmp_path)
    assert [r.name for r in rollouts] == ["1/0_0", "1/0_1", "1/0_2"]
    report = await audit(make_judge(JudgeSettings(backend="offline"), POOL), REFERENCES, rollouts, SMALL)
    assert report.rollouts == 3 and report.pictures == len(POOL) + 3
    assert all(d.comparisons == 2 for d in report.audited.difficulty)  # two of the three rollouts each


def test_the_command_writes_the_report_and_prints_it(tmp_path, capsys):
    assert main(["judge", "audit", "--out", str(tmp_path), "--pairs", "6", "--triads", "4", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((tmp_path / "audit.json").read_text())
    assert printed == written and written["audited"]["backend"].startswith("offline-pool-similarity")
    page = (tmp_path / "audit.md").read_text()
    assert "| position bias |" in page and "planted-coin-flip" in page
