"""The rollout store and the curves file: one atomic shard per step, loadable by datasets, cut back on resume."""

from __future__ import annotations

import io
import pickle

import pytest
from PIL import Image
from transformers import TrainerState

from ground.records import DeadLetter, GateVerdict, RenderResult, RewardParts, sketch_hash
from ground.sketch import inventory
from watercolour.run_records.curves import CurvesFile, columns, curve_row, rollout_summary
from watercolour.run_records.rollout_store import RolloutStore, gallery_items


GENERATIONS = 2
PROMPT = [{"role": "user", "content": "Paint a red poppy in loose watercolour."}]


def png_bytes(colour: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def scored(flower_sketch: str) -> list[RewardParts]:
    """One admitted painting and one gate refusal whose scoring hit a dead letter."""
    admitted = RewardParts(
        reward=0.42,
        terms={"gate": 1.0, "length": 0.1, "aesthetic": 0.5, "judge": 0.5},
        verdict=GateVerdict(
            passed=True,
            sketch=flower_sketch,
            sketch_hash=sketch_hash(flower_sketch),
            counts=inventory(flower_sketch).counts(),  # as the gate counts them
            render=RenderResult(ok=True, png=png_bytes("salmon"), coverage=0.31, render_ms=850.0),
        ),
        timings_ms={"gate": 900.0},
    )
    refused = RewardParts(
        reward=None,
        verdict=GateVerdict(passed=False, violations=["bare_primitives"]),
        dead_letter=DeadLetter(stage="render", cause="browser gone", at=0.0),
    )
    return [admitted, refused]


def record(store: RolloutStore, step: int, parts: list[RewardParts], logged: list | None = None) -> None:
    kwargs = {"trainer_state": TrainerState(global_step=step - 1)}
    if logged is not None:
        kwargs["log_metric"] = lambda name, value: logged.append((name, value))
    store.record_batch(
        [PROMPT] * len(parts), [[{"role": "assistant", "content": "```js\n...\n```"}]] * len(parts), parts, kwargs
    )


def test_each_step_is_one_shard_that_datasets_loads(tmp_path, flower_sketch):
    from datasets import load_dataset

    store = RolloutStore(tmp_path, GENERATIONS, preset="smoke")
    for step in (1, 2):
        record(store, step, scored(flower_sketch))
    assert [path.name for path in sorted((tmp_path / "rollouts").glob("*.parquet"))] == [
        "step-00001.parquet",
        "step-00002.parquet",
    ]
    table = load_dataset("parquet", data_files=store.data_files(), split="train")
    assert table.num_rows == 4
    first = table[0]
    assert (first["step"], first["group"], first["index"], first["preset"]) == (1, 0, 0, "smoke")
    assert first["sketch"] == flower_sketch and first["reward"] == pytest.approx(0.42)
    assert (tmp_path / first["png"]).read_bytes() == png_bytes("salmon")
    assert first["png"] == "rollouts/png/1/0_0.png"
    refused = table[1]
    assert refused["reward"] is None and refused["png"] is None
    assert refused["violations"] == ["bare_primitives"] and "browser gone" in refused["dead_letter"]


def test_steps_with_nothing_rendered_load_with_the_others(tmp_path, flower_sketch):
    from datasets import load_dataset

    store = RolloutStore(tmp_path, GENERATIONS)
    refused = RewardParts(reward=0.0, verdict=GateVerdict(passed=False, violations=["no_sketch"]))
    record(store, 1, [refused, refused])
    record(store, 2, scored(flower_sketch))
    table = load_dataset("parquet", data_files=store.data_files(), split="train")
    assert table["png"] == [None, None, "rollouts/png/2/0_0.png", None]


def test_each_rollout_records_the_weights_it_was_sampled_with(tmp_path, flower_sketch):
    store = RolloutStore(tmp_path, GENERATIONS)
    # Synchronous: a step's rows were sampled by the weights of the step before.
    record(store, 3, scored(flower_sketch))
    # Pipelined rollouts hand in each row's own (one of these began an update earlier).
    prompts, completions = [PROMPT] * 2, [[{"role": "assistant", "content": "```js\n...\n```"}]] * 2
    kwargs = {"trainer_state": TrainerState(global_step=3), "sampled_at": [3, 2]}
    store.record_batch(prompts, completions, scored(flower_sketch), kwargs)
    assert [(row["step"], row["sampled_at"]) for row in store.rows()] == [(3, 2), (3, 2), (4, 3), (4, 2)]


def test_a_step_is_written_once(tmp_path, flower_sketch):
    store = RolloutStore(tmp_path, GENERATIONS)
    record(store, 1, scored(flower_sketch))
    with pytest.raises(FileExistsError, match="recorded once"):
        record(store, 1, scored(flower_sketch))


def test_truncate_forgets_the_steps_a_resume_redoes(tmp_path, flower_sketch):
    store = RolloutStore(tmp_path, GENERATIONS)
    for step in (1, 2, 3):
        record(store, step, scored(flower_sketch))
    (store.root / "step-00004.parquet.partial").write_bytes(b"half a shard")
    store.truncate(after_step=1)
    assert store.steps() == [1]
    assert sorted(path.name for path in (store.root / "png").iterdir()) == ["1"]
    assert not list(store.root.glob("*.partial"))
    record(store, 2, scored(flower_sketch))
    assert store.steps() == [1, 2]


def test_the_hook_pickles_with_the_reward(tmp_path, flower_sketch):
    hook = pickle.loads(pickle.dumps(RolloutStore(tmp_path, GENERATIONS).record_batch))
    record(hook.__self__, 1, scored(flower_sketch))
    assert RolloutStore(tmp_path, GENERATIONS).steps() == [1]


def test_the_step_summary_is_logged_and_leaves_out_unmeasured_rewards(tmp_path, flower_sketch):
    logged: list = []
    record(RolloutStore(tmp_path, GENERATIONS), 1, scored(flower_sketch), logged)
    summary = dict(logged)
    assert summary["rollouts/reward_median"] == pytest.approx(0.42)
    assert summary["rollouts/share_under_0.3"] == 0.0
    assert summary["rollouts/coverage_mean"] == pytest.approx(0.31)
    assert summary["rollouts/shapes_mean"] == 2.0  # call sites: the petal loop's beginShape and the centre
    assert rollout_summary([])["rollouts/reward_best"] is None


def test_gallery_cards_point_at_the_stored_paintings(tmp_path, flower_sketch):
    store = RolloutStore(tmp_path, GENERATIONS, preset="smoke")
    record(store, 1, scored(flower_sketch))
    items = gallery_items(store.rows(), tmp_path / "gallery", tmp_path)
    assert [item.image for item in items] == ["../rollouts/png/1/0_0.png", None]
    assert items[0].preset == "smoke" and items[0].parts["aesthetic"] == 0.5
    # A rollout the gate refused before rendering still gets a card: its violations and what the policy wrote.
    assert items[1].violations == ["bare_primitives"] and items[1].sketch == "```js\n...\n```"


def test_curves_append_per_step_and_truncate_on_resume(tmp_path):
    curves = CurvesFile(tmp_path)
    for step in (1, 2, 3):
        curves.append(
            curve_row(step, {"reward": 0.1 * step, "step_time": 3.0, "time/generate_s": 1.0, "time/score_s": 1.5})
        )
    with curves.path.open("a") as handle:
        handle.write("4,0.4")  # a crash in the middle of an append
    assert [row["step"] for row in curves.read()] == ["1", "2", "3"]
    curves.truncate(after_step=2)
    rows = curves.read()
    assert [row["step"] for row in rows] == ["1", "2"] and list(rows[0]) == columns()
    assert float(rows[0]["update_s"]) == pytest.approx(0.5)


def painting(colour: str) -> bytes:
    """A patch of `colour` on cream paper, big enough for the paint to be told from the paper."""
    image = Image.new("RGB", (120, 120), "#f6f0e4")
    image.paste(Image.new("RGB", (60, 60), colour), (30, 30))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_each_rollout_records_whether_it_shows_its_subject_and_the_step_logs_the_share(tmp_path, flower_sketch):
    parts = scored(flower_sketch)
    red, blue = parts[0], parts[0].model_copy(deep=True)
    assert red.verdict is not None and red.verdict.render is not None and blue.verdict is not None
    red.verdict.render.png = painting("#e2483d")
    blue.verdict.render = RenderResult(ok=True, png=painting("#5b78cf"), coverage=0.25, render_ms=800.0)
    store, logged = RolloutStore(tmp_path, 3), []
    kwargs = {
        "trainer_state": TrainerState(global_step=0),
        "log_metric": lambda name, value: logged.append((name, value)),
        "subject": ["a red poppy"] * 3,  # the dataset's column, one per rollout
    }
    store.record_batch([PROMPT] * 3, ["```js\n...\n```"] * 3, [red, blue, parts[1]], kwargs)
    rows = store.rows()
    assert [row["subject"] for row in rows] == ["a red poppy"] * 3
    # The red painting shows a red poppy; the blue one does not; a rollout with no painting does not either.
    assert [row["on_subject"] for row in rows] == [True, False, False]
    assert dict(logged)["rollouts/on_subject_share"] == pytest.approx(1 / 3)
    # Without a subject column there is nothing to measure against.
    assert rollout_summary([{**row, "on_subject": None} for row in rows])["rollouts/on_subject_share"] is None
