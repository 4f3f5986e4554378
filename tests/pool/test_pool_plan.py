"""The refresh plan: which subjects get new candidates (thin ones first, then ones calibration found mis-set)."""

from __future__ import annotations

from ground.reference_pool import Reference
from watercolour.pool.plan import latest_pool, refresh_plan


def reference(name: str, subject: str, tier: str = "love") -> Reference:
    return Reference(name=name, tier=tier, subject=subject, sketch="", png=b"", rated_by="user")  # type: ignore[arg-type]


def calibration(bands: dict[str, str]) -> dict:
    return {"references": [{"name": name, "band": band} for name, band in bands.items()]}


POOL = [
    reference("poppy_a", "a red poppy"),
    reference("poppy_b", "a red poppy", "okay"),
    reference("sun_a", "a sunflower"),
    reference("sun_b", "a sunflower"),
    reference("peony", "a single pink peony"),
]
SUBJECTS = ("a red poppy", "a sunflower", "a single pink peony", "a white camellia")


def test_thin_subjects_come_first_in_prompt_order():
    plan = refresh_plan(POOL, None, SUBJECTS, minimum=2)
    assert [(row["subject"], row["references"]) for row in plan] == [
        ("a single pink peony", 1),
        ("a white camellia", 0),
    ]


def test_a_subject_whose_references_all_sit_in_one_end_band_is_due_and_a_mixed_one_is_not():
    bands = {"poppy_a": "easy", "poppy_b": "easy", "sun_a": "easy", "sun_b": "rung", "peony": "out_of_reach"}
    plan = refresh_plan(POOL, calibration(bands), SUBJECTS, minimum=2, limit=10)
    assert [row["subject"] for row in plan] == ["a single pink peony", "a white camellia", "a red poppy"]
    assert plan[-1]["reason"] == "every reference easy"
    assert refresh_plan(POOL, calibration(bands), SUBJECTS, minimum=2, limit=1) == plan[:1]


def test_the_latest_revision_is_the_one_latest_names(tmp_path):
    assert latest_pool(tmp_path) is None
    (tmp_path / "LATEST").write_text("abc123\n")
    assert latest_pool(tmp_path) == tmp_path / "revisions" / "abc123"
