"""Load and validate the Settings tree: YAML file, then `--set key.path=value` overrides.

Validation walks the dataclass type hints, so a new field is validated the moment it is declared.
Every error is a ConfigError that names the key path and what was expected, e.g.
`engine.max_num_seqs: expected an integer ≥ 1, got 'x'`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from pathlib import Path
from typing import Any, Literal

import yaml

from qwen3tts.errors import ConfigError
from qwen3tts.paths import with_default_paths
from qwen3tts.settings import Settings


def load_settings(path: Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> Settings:
    """Settings from defaults, then the YAML file at `path` (if given), then `key.path=value` overrides.

    Paths left null get their locations from the environment (qwen3tts.paths), never the working directory.
    """
    tree: dict[str, Any] = {}
    if path is not None:
        tree = _read_yaml(path)
    for item in overrides:
        _apply_override(tree, item)
    return with_default_paths(build(Settings, tree, ""))


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (invalid byte at offset {exc.start}); save it as UTF-8"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        one_line = " ".join(str(exc).split())
        raise ConfigError(f"{path}: not valid YAML: {one_line}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping of sections at the top level, got {type(data).__name__}"
        )
    return data


def _apply_override(tree: dict[str, Any], item: str) -> None:
    """`engine.max_num_seqs=2` -> tree["engine"]["max_num_seqs"] = 2 (the value parsed as YAML)."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item!r}: expected key.path=value")
    parts = key.strip().split(".")
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{'.'.join(parts[:-1])}: expected a section, got {child!r}")
        node = child
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    node[parts[-1]] = value


def build(cls: type, data: Any, path: str) -> Any:
    """Instantiate dataclass `cls` from a mapping, validating every field against its type hint."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path or '<top>'}: expected a section (mapping), got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = f"{path}." if path else ""
        raise ConfigError(f"{where}{unknown[0]}: unknown key (known: {', '.join(sorted(fields))})")
    kwargs = {}
    for name, value in data.items():
        key_path = f"{path}.{name}" if path else name
        kwargs[name] = _convert(hints[name], value, key_path, fields[name].metadata)
    return cls(**kwargs)


def _convert(hint: Any, value: Any, path: str, meta: typing.Mapping[str, Any]) -> Any:
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return build(hint, value, path)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return _convert(args[0], value, path, meta)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value is None and "null" in choices:
            return "null"  # `sink: null` unquoted is YAML's null, and means the null sink
        normalised = str(value) if not isinstance(value, bool) else value
        if normalised not in choices:
            raise ConfigError(f"{path}: expected one of {', '.join(map(str, choices))}, got {value!r}")
        return normalised
    if origin is tuple:
        return _convert_tuple(typing.get_args(hint)[0], value, path, meta)
    return _convert_scalar(hint, value, path, meta)


def _convert_tuple(item_type: type, value: Any, path: str, meta: typing.Mapping[str, Any]) -> tuple:
    if dataclasses.is_dataclass(item_type):  # a list of sections (zones): each one built and checked
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{path}: expected a list of sections, got {value!r}")
        return tuple(build(item_type, item, f"{path}[{i}]") for i, item in enumerate(value))
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{path}: expected a list, got {value!r}")
    if not value and not meta.get("may_be_empty"):
        raise ConfigError(f"{path}: expected a non-empty list, got []")
    return tuple(_convert_scalar(item_type, v, f"{path}[{i}]", meta) for i, v in enumerate(value))


def _convert_scalar(hint: type, value: Any, path: str, meta: typing.Mapping[str, Any]) -> Any:
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer{_range_text(meta)}, got {value!r}")
        _check_range(value, path, meta, "an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{path}: expected a number{_range_text(meta)}, got {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"{path}: expected a finite number{_range_text(meta)}, got {value!r}")
        _check_range(float(value), path, meta, "a number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected a string, got {value!r}")
        _check_topic_part(value, path, meta)
        return value
    if hint is Path:
        if not isinstance(value, str | Path) or not str(value):
            raise ConfigError(f"{path}: expected a file system path, got {value!r}")
        return Path(value)
    raise ConfigError(f"{path}: unsupported setting type {hint!r}")  # a bug in settings/, not user input


def _check_topic_part(value: str, path: str, meta: typing.Mapping[str, Any]) -> None:
    """MQTT topic pieces: no wildcards, no NUL; a single level (no `/`) where the key says so."""
    kind = meta.get("topic")
    if kind is None:
        return
    forbidden = "+#\0" + ("/" if kind == "level" else "")
    bad = sorted({c for c in value if c in forbidden})
    if bad:
        what = "one MQTT topic level" if kind == "level" else "an MQTT topic prefix"
        shown = ", ".join(repr(c) for c in bad)
        raise ConfigError(f"{path}: expected {what} without {shown}, got {value!r}")


def check_writable_dirs(settings: Settings) -> None:
    """Fail at start-up, naming the key, when the daemon could not write its spool or WAV files."""
    dirs = [("announcements.spool_dir", settings.announcements.spool_dir)]
    if settings.audio.sink in ("wav", "auto"):
        dirs.append(("audio.wav_dir", settings.audio.wav_dir))
    for key, directory in dirs:
        existing = Path(directory)
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise ConfigError(f"{key}: {existing} is not a directory (from {directory})")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise ConfigError(
                f"{key}: {directory} is not writable by this user (no write permission on {existing})"
            )


def _range_text(meta: typing.Mapping[str, Any]) -> str:
    low, high = meta.get("min"), meta.get("max")
    if low is not None and high is not None:
        return f" in {low}..{high}"
    if low is not None:
        return f" ≥ {low}"
    if high is not None:
        return f" ≤ {high}"
    return ""


def _check_range(value: float, path: str, meta: typing.Mapping[str, Any], kind: str) -> None:
    low, high = meta.get("min"), meta.get("max")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(f"{path}: expected {kind}{_range_text(meta)}, got {value!r}")


def settings_to_dict(settings: Any) -> dict[str, Any]:
    """Plain nested dict (paths as strings, tuples as lists) — for `qwen3tts config` and round-trip tests."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        if isinstance(value, Path):
            return str(value)
        return value

    return plain(settings)
