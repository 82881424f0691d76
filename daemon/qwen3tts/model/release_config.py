"""The release's JSON config files, and a checked view of one JSON object that names file and key path
in every error (spec_parse.py and codec_spec_parse.py read the configs through it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qwen3tts.errors import CheckpointError

MODEL_CONFIG = "config.json"
GENERATION_CONFIG = "generation_config.json"
CODEC_CONFIG = "speech_tokenizer/config.json"
TOKENIZER_TYPE = "qwen3_tts_tokenizer_12hz"  # the only codec we implement (no public 25 Hz model)


class ConfigSection:
    """A JSON object plus where it came from, so every error can name file and key path."""

    def __init__(self, data: Any, file: str, path: str = ""):
        if not isinstance(data, Mapping):
            raise CheckpointError(f"{file}: {path or 'top level'} is not a JSON object")
        self.data, self.file, self.path = data, file, path

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def sub(self, name: str) -> ConfigSection:
        return ConfigSection(self.get(name), self.file, self.key(name))

    def get(self, name: str, default: Any = ...) -> Any:
        if name in self.data:
            return self.data[name]
        if default is ...:
            raise CheckpointError(f"{self.file}: {self.key(name)} missing")
        return default

    def typed(self, name: str, kind: type, default: Any = ...) -> Any:
        value = self.get(name, default)
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise CheckpointError(f"{self.file}: {self.key(name)} must be {kind.__name__}, got {value!r}")
        return value

    def ints(self, name: str, default: Any = ...) -> tuple[int, ...]:
        value = self.get(name, default)
        if not isinstance(value, list | tuple) or not all(isinstance(v, int) for v in value):
            raise CheckpointError(f"{self.file}: {self.key(name)} must be a list of integers, got {value!r}")
        return tuple(value)
