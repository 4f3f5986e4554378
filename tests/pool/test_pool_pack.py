"""`pool pack`: rated candidates and the bundled seed pool become the same dataset and a folder `load_pool` reads."""

from __future__ import annotations

import json

import pytest

from ground.reference_pool import BUNDLED_POOL, load_pool
from watercolour.cli import main
from watercolour.pool.candidates import Candidate, Ratings, append_candidate, write_ratings
from watercolour.pool.pack import (
    bundled_rows,
    candidate_rows,
    pool_revision,
    references_from_dataset,
    write_pool,
)


def rated_folder(tmp_path, tiers: dict[str, str]):
    folder = tmp_path / "candidates"
    folder.mkdir()
    sketches = sorted(BUNDLED_POOL.glob("*.js"))
    ratings = Ratings()
    for sketch, (name, tier) in zip(sketches, tiers.items(), strict=False):
        (folder / f"{name}.js").write_text(sketch.read_text())
        (folder / f"{name}.png").write_bytes(sketch.with_suffix(".png").read_bytes())
        append_candidate(
            folder,
            Candidate(
                id=name,
                model="org/m",
                endpoint="http://x",
                subject="a poppy",
                round=1,
                parent="p",
                photo="p.jpg",
                attribution="A. B. (cc0)",
                temperature=0.6,
                passed=True,
                coverage=0.3,
                js=f"{name}.js",
                png=f"{name}.png",
            ),  # fmt: skip
        )
        ratings.rate(name, tier)  # type: ignore[arg-type]
    write_ratings(folder, ratings)
    return folder


def test_love_and_okay_become_references_meh_stays_in_the_dataset_and_nope_is_dropped(tmp_path):
    from datasets import load_from_disk

    folder = rated_folder(tmp_path, {"c0": "love", "c1": "okay", "c2": "meh", "c3": "nope"})
    out = tmp_path / "pool"
    assert main(["pool", "pack", str(folder), "--out", str(out)]) == 0
    assert [(r.name, r.tier, r.rated_by) for r in load_pool(out)] == [("c0", "love", "user"), ("c1", "okay", "user")]
    dataset = load_from_disk(str(out / "dataset"))
    assert dataset["tier"] == ["love", "okay", "meh"] and dataset["attribution"][0] == "A. B. (cc0)"
    assert dataset.features["image"].__class__.__name__ == "Image" and dataset[0]["image"].size == (600, 600)
    assert [r.name for r in references_from_dataset(out / "dataset")] == ["c0", "c1"]
    assert (out / "REVISION").read_text().strip() == pool_revision(out)


def test_revision_changes_with_content_and_not_with_repacking(tmp_path):
    folder = rated_folder(tmp_path, {"c0": "love", "c1": "okay"})
    first = write_pool(candidate_rows(folder), tmp_path / "a", "test")
    assert write_pool(candidate_rows(folder), tmp_path / "b", "test") == first
    (tmp_path / "a" / "c0.js").write_text("// changed")
    assert pool_revision(tmp_path / "a") != first


def test_nothing_rated_love_or_okay_names_the_fix(tmp_path):
    with pytest.raises(ValueError, match="watercolour pool rate"):
        candidate_rows(rated_folder(tmp_path, {"c0": "meh", "c1": "nope"}))


def test_the_bundled_seed_pool_round_trips_through_the_dataset_format(tmp_path):
    write_pool(bundled_rows(), tmp_path / "seed", "seed")
    bundled = load_pool()
    for packed in (load_pool(tmp_path / "seed"), references_from_dataset(tmp_path / "seed" / "dataset")):
        assert [(r.name, r.tier, r.png, r.sketch) for r in packed] == [
            (r.name, r.tier, r.png, r.sketch) for r in bundled
        ]
        assert {r.rated_by for r in packed} == {"project"}


@pytest.mark.parametrize("step", ["generate", "rate", "pack", "calibrate", "refresh"])
def test_every_pool_step_explains_itself(step, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["pool", step, "--help"])
    assert exit.value.code == 0 and "usage: watercolour pool " + step in capsys.readouterr().out


@pytest.mark.browser
def test_refresh_re_renders_a_packed_pool_and_reports_no_drift(tmp_path, capsys):
    folder = rated_folder(tmp_path, {"c0": "love"})
    write_pool(candidate_rows(folder), tmp_path / "pool", "test")
    report = tmp_path / "refresh.json"
    assert main(["pool", "refresh", "--pool", str(tmp_path / "pool"), "--report", str(report)]) == 0
    assert "changed: none" in capsys.readouterr().out
    assert [row["sketch"] for row in json.loads(report.read_text())] == ["c0"]


def test_pack_push_uploads_the_revision_to_the_hub_named_by_hf_endpoint(tmp_path, hub, monkeypatch, capsys):
    from tests.servers.hub import HUB_TOKEN

    folder = rated_folder(tmp_path, {"cand_0000": "love", "cand_0001": "okay", "cand_0002": "nope"})
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_TOKEN", HUB_TOKEN)
    assert main(["pool", "pack", str(folder), "--out", str(tmp_path / "pool"), "--push", "me/pool"]) == 0
    revision = (tmp_path / "pool" / "REVISION").read_text().strip()
    uploaded = hub.repos["me/pool"]
    assert uploaded["REVISION"].decode().strip() == revision
    assert {"pool.json", "cand_0000.png", "cand_0001.js"} <= set(uploaded)
    assert any(path.startswith("dataset/") for path in uploaded)
    assert all(call.authorized for call in hub.calls_to("/commit/main"))
    assert f"pushed revision {revision} to {hub.endpoint}/" in capsys.readouterr().out
