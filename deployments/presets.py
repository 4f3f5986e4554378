"""The run presets: small YAML files in `deployments/presets/`, each a `RunConfig` by name.

A preset may name another in `extends:` and change only what differs; `load_config(name, overrides)` merges the
overrides (dotted keys, `weights.judge=0.3`) into it and validates the result once. Loading also reads each reward
term's settings (`aesthetic`, `judge`, ...) by the term's own model and checks that every weight and setting names a
registered term (`rewards.scoring.terms.resolve_terms`), which the run configuration on the ground floor cannot know.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from ground.run_config import RunConfig
from rewards.scoring.terms import resolve_terms


PRESETS_DIR = resources.files("deployments") / "presets"


def preset_names() -> list[str]:
    return sorted(entry.name.removesuffix(".yaml") for entry in PRESETS_DIR.iterdir() if entry.name.endswith(".yaml"))


def _read_preset(preset: str) -> dict[str, Any]:
    entry = PRESETS_DIR / f"{preset}.yaml"
    if not entry.is_file():
        raise ValueError(f"unknown preset {preset!r}: choose one of {', '.join(preset_names())}")
    data = yaml.safe_load(entry.read_text()) or {}
    base = data.pop("extends", None)
    return merge(_read_preset(base), data) if base else data


def merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge `overrides` into a copy of `base`; a dotted key 'a.b' is the nested key b inside a."""
    merged = dict(base)
    for key, value in overrides.items():
        head, _, rest = key.partition(".")
        if rest:
            value = {rest: value}
        if isinstance(value, dict) and isinstance(merged.get(head), dict):
            merged[head] = merge(merged[head], value)
        else:
            merged[head] = merge({}, value) if isinstance(value, dict) else value
    return merged


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """CLI overrides `key=value` to a dict; values are read as YAML, so `3` is an int and `null` is None."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, separator, value = item.partition("=")
        if not separator or not key.strip():
            raise ValueError(f"override {item!r} is not key=value (for example training.steps=3)")
        try:
            overrides[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ValueError(
                f"override {item!r}: the value is not valid YAML (quote a string with ':' or '[')"
            ) from None
    return overrides


def load_config(preset: str, overrides: dict[str, Any] | None = None) -> RunConfig:
    """The preset's configuration with `overrides` applied, validated once."""
    data = merge({"name": preset}, _read_preset(preset))
    return resolve_terms(RunConfig.model_validate(merge(data, overrides or {})))
