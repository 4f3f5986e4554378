"""Argument types and input checks shared by every command, so bad input is one line on stderr and exit code 2.

Flags are checked when they are parsed (`type=` functions below); what needs the whole configuration (the
preset with its overrides, the pool folder, a start adapter) is checked by `run_config` and `check_inputs`
before a command loads a model or writes anything. A command signals any such error by raising `UsageError`;
`watercolour.cli` prints it as `watercolour CMD: error: ...` and exits 2, with no traceback.
"""

from __future__ import annotations

import argparse
import difflib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from pydantic import ValidationError

    from ground.run_config import RunConfig


class UsageError(Exception):
    """An input or configuration error the user fixes: reported in one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a parse error is one line naming the fix (`--help`), not the usage block and a message."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    """An integer of at least 1."""
    return _int_at_least(text, 1)


def count(text: str) -> int:
    """An integer of at least 0."""
    return _int_at_least(text, 0)


def _int_at_least(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{text} must be at least {least}")
    return value


def positive_float(text: str) -> float:
    """A finite number greater than 0 (NaN and infinity are refused: a NaN deadline is no deadline)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number greater than 0")
    return value


def port(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a TCP port (1-65535)")
    return value


def http_urls(text: str) -> list[str]:
    """Comma-separated http(s) base URLs."""
    urls = [url.strip() for url in text.split(",")]
    bad = [url for url in urls if not url.startswith(("http://", "https://")) or not url.partition("://")[2]]
    if bad:
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {', '.join(repr(url) for url in bad)}")
    return urls


def existing_folder(text: str) -> Path:
    return _existing(text, "folder")


def existing_file(text: str) -> Path:
    return _existing(text, "file")


def _existing(text: str, kind: str) -> Path:
    path = Path(text)
    if not (path.is_dir() if kind == "folder" else path.is_file()):
        other = "file" if kind == "folder" else "folder"
        raise argparse.ArgumentTypeError(
            f"{text} is a {other}, not a {kind}" if path.exists() else f"no such {kind}: {text}"
        )
    return path


def output_folder(text: str) -> Path:
    """A folder to write into: it may not exist yet, but it may not be a file, nor sit under one."""
    path = Path(text)
    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise argparse.ArgumentTypeError(f"{text} cannot be a folder: {blocker} is a file")
    return path


def output_file(text: str) -> Path:
    """A file to write: not an existing folder, and its folder not a file."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; name a file")
    output_folder(str(path.parent))
    return path


def pool_folder(text: str) -> Path:
    """A reference pool folder: one that holds pool.json (see ground.reference_pool)."""
    path = existing_folder(text)
    if not (path / "pool.json").is_file():
        raise argparse.ArgumentTypeError(f"{text} is not a reference pool (no pool.json): pass a packed pool folder")
    return path


def preset(text: str) -> str:
    from deployments.presets import preset_names

    if text not in preset_names():
        raise argparse.ArgumentTypeError(f"unknown preset {text!r}: choose one of {', '.join(preset_names())}")
    return text


def settings_model(annotation: Any) -> Any:
    """The settings model a field holds (`RepaintSettings | None` holds `RepaintSettings`); None for a value."""
    import typing

    from pydantic import BaseModel

    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def override(text: str) -> tuple[str, Any]:
    """`key=value` with the value read as YAML, checked against the setting's type and bounds as it is parsed."""
    from pydantic import BaseModel, create_model
    from pydantic import ValidationError as Invalid
    from pydantic.fields import FieldInfo

    from deployments.presets import parse_overrides
    from ground.run_config import REPLACED_SETTINGS, RunConfig
    from rewards.scoring.terms import reward_terms

    try:
        [(key, value)] = parse_overrides([text]).items()
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if key in REPLACED_SETTINGS:
        raise argparse.ArgumentTypeError(REPLACED_SETTINGS[key])
    # The run configuration's own fields, and each reward term's settings under the term's name.
    terms = {name: FieldInfo.from_annotation(term.settings) for name, term in reward_terms().items() if term.settings}
    model: type[BaseModel] | None = RunConfig
    field = None
    for depth, part in enumerate(key.split(".")):
        fields = model.model_fields if model is not None else {}
        if depth == 0:
            fields = {**fields, **terms}
        elif depth == 1 and key.startswith("weights."):
            # A term registered beyond the four takes its weight under its own name, bounded like theirs.
            fields = {**{name: fields["gate"] for name in reward_terms()}, **fields}
        if part not in fields:
            known = [".".join([*key.split(".")[:depth], name]) for name in fields]
            hint = difflib.get_close_matches(key, known, n=1)
            raise argparse.ArgumentTypeError(
                f"unknown setting {key!r}" + (f": did you mean {hint[0]}?" if hint else f"; known: {', '.join(known)}")
            )
        field = fields[part]
        model = settings_model(field.annotation)
    if field is not None and model is None:
        probe = create_model("Override", setting=(field.annotation or Any, field))  # the type and bounds
        try:
            probe.model_validate({"setting": value})
        except Invalid as error:
            reason = error.errors()[0]["msg"]
            raise argparse.ArgumentTypeError(f"override {text!r}: {reason} (got {value!r})") from None
    return key, value


def one_line(error: ValidationError) -> str:
    """A pydantic error as one line: each failed setting with its reason and the value given."""
    parts = []
    for item in error.errors():
        if item["type"] == "default_factory_not_called":
            continue  # a consequence of another error, not a cause
        where = ".".join(str(p) for p in item["loc"])
        given = f" (got {item['input']!r})" if not isinstance(item.get("input"), dict) else ""
        parts.append(f"{where + ': ' if where else ''}{item['msg']}{given}")
    return "; ".join(parts)


def run_config(preset_name: str, overrides: list[tuple[str, Any]], **more: Any) -> RunConfig:
    """The preset with `overrides` (then `more`, from dedicated flags) applied; any error is a UsageError."""
    from pydantic import ValidationError as Invalid

    from deployments.presets import load_config

    try:
        return load_config(preset_name, dict(overrides) | {k: v for k, v in more.items() if v is not None})
    except Invalid as error:
        raise UsageError(f"preset {preset_name}: {one_line(error)}") from None
    except ValueError as error:
        raise UsageError(str(error)) from None


def writable_folder(path: Path, setting: str) -> None:
    """`output_folder` for a folder that comes from the configuration rather than a flag."""
    try:
        output_folder(str(path))
    except argparse.ArgumentTypeError as error:
        raise UsageError(f"{setting}: {error}") from None


def check_inputs(config: RunConfig) -> None:
    """What a run reads and writes, checked before any model loads: the reference pool, a start adapter and
    the run directory."""
    from ground.reference_pool import PoolError, load_pool

    writable_folder(config.run_dir, "run_dir")
    if config.pool_dir is not None:
        try:
            load_pool(config.pool_dir)
        except PoolError as error:
            raise UsageError(str(error)) from None
    adapter = config.training.start_adapter
    if adapter is not None and not (Path(adapter) / "adapter_config.json").is_file():
        raise UsageError(f"training.start_adapter={adapter} holds no adapter_config.json: pass a LoRA adapter folder")
