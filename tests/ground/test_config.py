"""The run configuration: presets load and validate once, overrides merge, and it survives YAML and pickle."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from pydantic import ValidationError

from deployments.presets import load_config, merge, parse_overrides, preset_names
from ground.run_config import REPLACED_SETTINGS, RunConfig, TrainingSettings
from rewards.aesthetic import aesthetic_settings
from rewards.judging.judge import judge_settings


SCORER = {"aesthetic.url": "https://scorer.example"}
REMOTE = {"judge-led": (0.60, 0.30), "hps-led": (0.30, 0.60), "hps-only": (0.00, 0.90)}


def test_the_four_presets_are_there() -> None:
    assert {"judge-led", "hps-led", "hps-only", "offline"} <= set(preset_names())


@pytest.mark.parametrize("preset", sorted(REMOTE))
def test_remote_presets_carry_the_published_weights_and_backends(preset: str) -> None:
    config = load_config(preset, SCORER)
    weights = config.weights
    assert (weights.gate, weights.length) == (0.05, 0.05)
    assert (weights.judge, weights.aesthetic) == REMOTE[preset]
    assert weights.gate + weights.length + weights.judge + weights.aesthetic == pytest.approx(1.0)
    assert (aesthetic_settings(config).backend, judge_settings(config).backend) == ("hpsv3", "openai")
    assert judge_settings(config).base_url == "https://router.huggingface.co/v1"
    assert config.name == preset and config.run_dir == Path("runs") / preset


def test_offline_preset_is_judge_led_with_offline_backends_and_needs_no_url() -> None:
    config = load_config("offline")
    assert (config.weights.judge, config.weights.aesthetic) == (0.60, 0.30)
    assert (aesthetic_settings(config).backend, judge_settings(config).backend) == ("offline", "offline")


@pytest.mark.parametrize("preset", sorted(REMOTE))
def test_remote_preset_without_scorer_url_names_the_missing_field(preset: str) -> None:
    with pytest.raises(ValueError, match=r"aesthetic\.url is required"):
        load_config(preset)


def test_a_remote_backend_at_weight_zero_needs_no_endpoint() -> None:
    config = load_config("hps-only", {**SCORER, "judge.base_url": None})
    assert config.weights.judge == 0.0 and judge_settings(config).base_url is None
    no_scorer = load_config("judge-led", {"weights": {"judge": 0.90, "aesthetic": 0.0}})
    assert aesthetic_settings(no_scorer).url is None


def test_judge_without_base_url_names_the_missing_field() -> None:
    with pytest.raises(ValueError, match=r"judge\.base_url is required"):
        load_config("judge-led", {**SCORER, "judge.base_url": None})


def test_weights_must_sum_to_one() -> None:
    with pytest.raises(ValidationError, match="weights must sum to 1"):
        load_config("offline", {"weights.judge": 0.5})
    moved = load_config("offline", {"weights.judge": 0.5, "weights.aesthetic": 0.4})
    assert (moved.weights.judge, moved.weights.aesthetic, moved.weights.gate) == (0.5, 0.4, 0.05)


def test_dotted_and_nested_overrides_merge_into_the_preset() -> None:
    config = load_config(
        "offline",
        {"training.steps": 3, "training": {"lora_r": 4}, "render.browsers": 1, "name": "trial", "judge.references": 2},
    )
    assert (config.training.steps, config.training.lora_r, config.training.lora_alpha) == (3, 4, 32)
    assert config.render.browsers == 1 and config.render.size == 600
    assert judge_settings(config).references == 2 and judge_settings(config).backend == "offline"
    assert config.name == "trial" and config.run_dir == Path("runs/trial")


def test_merge_leaves_its_inputs_alone() -> None:
    base = {"a": {"b": 1, "c": 2}}
    assert merge(base, {"a.b": 5, "d": {"e": 1}}) == {"a": {"b": 5, "c": 2}, "d": {"e": 1}}
    assert base == {"a": {"b": 1, "c": 2}}


def test_parse_overrides_reads_values_as_yaml() -> None:
    parsed = parse_overrides(["training.steps=3", "training.bf16=false", "pool_dir=null", "name=a=b", "x.y=0.5"])
    assert parsed == {"training.steps": 3, "training.bf16": False, "pool_dir": None, "name": "a=b", "x.y": 0.5}
    with pytest.raises(ValueError, match="key=value"):
        parse_overrides(["training.steps"])


def test_unknown_keys_and_presets_are_refused() -> None:
    with pytest.raises(ValueError, match="no setting or reward term named trainig"):
        load_config("offline", {"trainig.steps": 3})
    with pytest.raises(ValidationError, match="ulr"):
        load_config("offline", {"aesthetic.ulr": "https://scorer.example"})
    with pytest.raises(ValueError, match="unknown preset 'judge_led'.*judge-led"):
        load_config("judge_led")


def test_training_defaults_follow_the_recipe() -> None:
    training = load_config("offline").training
    assert (training.lora_r, training.lora_alpha, training.learning_rate) == (16, 32, 5e-5)
    assert (training.lr_scheduler, training.warmup_steps, training.scale_rewards) == (
        "constant_with_warmup",
        5,
        "none",
    )
    assert (training.num_generations, training.top_p, training.top_k, training.temperature) == (8, 0.95, 20, 1.0)
    assert (training.max_completion_length, training.per_device_batch_size) == (8192, 1)
    assert (training.gradient_accumulation_steps, training.steps, training.save_steps) == (8, 200, 10)
    assert training.bf16 is None and training.gradient_checkpointing is None and training.start_adapter is None
    assert training.subject == "a peach hibiscus" and training.prompt == "full"


def test_generation_is_one_choice_unset_in_every_preset() -> None:
    assert all(load_config(name, SCORER).training.generation is None for name in preset_names())
    assert load_config("offline", {"training.generation": "trl"}).training.generation == "trl"
    with pytest.raises(ValidationError, match="'trl' or 'fast'"):
        load_config("offline", {"training.generation": "compiled"})
    assert len(TrainingSettings.model_fields) <= 28


@pytest.mark.parametrize("key", sorted(REPLACED_SETTINGS))
def test_a_replaced_generation_setting_is_refused_with_one_line_naming_its_replacement(key: str) -> None:
    from watercolour.commands.arguments import one_line

    with pytest.raises(ValidationError) as refused:
        load_config("offline", {key: True})
    line = one_line(refused.value)
    assert line == f"training: Value error, {REPLACED_SETTINGS[key]}" and "\n" not in line
    assert "training.generation=fast" in line and "training.generation=trl" in line


def test_rollouts_stay_synchronous_unless_a_staleness_bound_is_set() -> None:
    assert load_config("offline").training.pipeline.max_staleness == 0
    assert load_config("offline", {"training.pipeline.max_staleness": 2}).training.pipeline.max_staleness == 2


def test_pipelined_rollouts_are_refused_where_they_cannot_run() -> None:
    pipelined = {"training.pipeline.max_staleness": 1}
    with pytest.raises(ValidationError, match="training.processes=1"):
        load_config("offline", {**pipelined, "training.processes": 2})
    with pytest.raises(ValidationError, match="max_staleness=0 for a repaint run"):
        load_config("offline", {**pipelined, "repaint.turns": 2})
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        load_config("offline", {"training.pipeline.max_staleness": -1})


def test_config_round_trips_through_yaml_and_pickle(tmp_path: Path) -> None:
    config = load_config("hps-led", {**SCORER, "training.start_adapter": "adapters/warm", "pool_dir": "my-pool"})
    config.save(tmp_path / "config.yaml")
    assert RunConfig.load(tmp_path / "config.yaml") == config
    assert pickle.loads(pickle.dumps(config)) == config


def test_every_field_has_a_description_for_the_prefect_form() -> None:
    schema = RunConfig.model_json_schema()
    models = {"RunConfig": schema, **schema["$defs"]}
    missing = [
        f"{model}.{field}"
        for model, definition in models.items()
        for field, spec in definition.get("properties", {}).items()
        if "description" not in spec
    ]
    assert missing == []


def test_the_smoke_preset_checkpoints_every_step_so_a_rehearsed_failure_resumes():
    # fail_at_step=1 fails in step 2, after checkpoint-1: with a checkpoint every 2 steps its retry started afresh.
    assert load_config("smoke").training.save_steps == 1


def test_the_space_gives_the_aesthetic_scorer_its_url_unless_one_is_given() -> None:
    config = load_config("judge-led", {"space.repo_id": "Me/Watercolour_HPSv3"})
    assert aesthetic_settings(config).url == "https://me-watercolour-hpsv3.hf.space"
    given = load_config("judge-led", {"space.repo_id": "me/scorer", **SCORER})
    assert aesthetic_settings(given).url == SCORER["aesthetic.url"]
