"""`pool calibrate`: per-reference win rates through the judge's own protocol; unresolved comparisons left out."""

from __future__ import annotations

import json

from ground.reference_pool import BUNDLED_POOL, load_pool
from rewards.judging.settings import JudgeSettings
from tests.servers.images import layered_wash
from tests.servers.openai_compat import openai_compat_server, verdict
from watercolour.cli import main
from watercolour.pool.calibrate import band, calibrate, find_paintings


def test_bands_split_at_a_quarter_and_three_quarters():
    assert [band(x) for x in (0.9, 0.75, 0.5, 0.25, 0.1, None)] == [
        "easy", "rung", "rung", "rung", "out_of_reach", "unmeasured",
    ]  # fmt: skip


def test_offline_calibration_of_the_bundled_pool_writes_a_report(tmp_path):
    out = tmp_path / "calibration.json"
    paintings = str(BUNDLED_POOL / "pink_*.png")
    assert main(["pool", "calibrate", "--paintings", paintings, "--k", "2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert len(report["paintings"]) == 2 and report["judge"].startswith("offline")
    assert len(report["references"]) == len(load_pool())
    assert all(row["resolved"] == 2 and row["unresolved"] == 0 for row in report["references"])
    assert sum(len(names) for names in report["bands"].values()) == len(load_pool())


async def test_unresolved_comparisons_are_excluded_not_counted_as_losses(tmp_path):
    pool = load_pool()
    mute = next(r for r in pool if r.tier == "okay").png
    painting = tmp_path / "painting.png"
    painting.write_bytes(layered_wash(seed=3))

    def rule(a: bytes, b: bytes) -> str:
        if mute in (a, b):
            return "I cannot decide."  # no verdict in either order: unresolved
        return verdict("A" if a == painting.read_bytes() else "B")  # the painting always wins

    with openai_compat_server(rule) as server:
        settings = JudgeSettings(backend="openai", base_url=server.url + "/v1", attempts=1, timeout_s=10)
        report = await calibrate(None, find_paintings(str(painting)), 1, settings)
    rows = {row["name"]: row for row in report["references"]}
    muted = next(r.name for r in pool if r.png == mute)
    assert rows[muted] == {**rows[muted], "win_rate": None, "resolved": 0, "unresolved": 1, "band": "unmeasured"}
    assert all(row["win_rate"] == 1.0 for name, row in rows.items() if name != muted)
    assert report["bands"]["unmeasured"] == [muted]
