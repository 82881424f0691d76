"""The site lexicon: how this site says its own words, applied before normalisation.

A YAML file with two optional mappings:

    words:                 # whole words or phrases, case-sensitive, never inside another word
      Qwen3: Qwen three
      Rd.: Road
    patterns:              # Python regular expressions; the spoken form may use \\1 or \\g<name>
      '\\bPl\\. (\\d+)': 'Platform \\1'

Words are replaced in one pass (the longest entry first), so a replacement is never replaced again;
patterns then run in file order. The file is read once and again on SIGHUP: a file that does not load
raises ConfigError naming the entry, and the caller keeps the lexicon it had.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from qwen3tts.errors import ConfigError

log = logging.getLogger(__name__)

_GROUP_REFERENCE = re.compile(r"\\(\d+)|\\g<([^>]*)>")


@dataclass(frozen=True)
class Lexicon:
    words: dict[str, str] = field(default_factory=dict)
    patterns: tuple[tuple[re.Pattern[str], str], ...] = ()
    source: str = ""
    _word_pattern: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.words:  # one alternation, longest entry first, so "Qwen3 Max" wins over "Qwen3"
            ordered = sorted(self.words, key=len, reverse=True)
            alternatives = "|".join(re.escape(word) for word in ordered)
            object.__setattr__(self, "_word_pattern", re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)"))

    @classmethod
    def load(cls, path: str | Path) -> Lexicon:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"text.lexicon: cannot read {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"text.lexicon: {path} is not valid YAML: {exc}") from exc
        return cls.from_dict(data if data is not None else {}, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "lexicon") -> Lexicon:
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping with 'words' and/or 'patterns'")
        unknown = sorted(set(data) - {"words", "patterns"})
        if unknown:
            raise ConfigError(
                f"{source}: unknown key(s) {', '.join(map(str, unknown))} (known: words, patterns)"
            )
        words = _string_mapping(data.get("words"), f"{source}: words")
        patterns = tuple(
            _compile(pattern, say, f"{source}: patterns[{pattern!r}]")
            for pattern, say in _string_mapping(data.get("patterns"), f"{source}: patterns").items()
        )
        return cls(words=words, patterns=patterns, source=source)

    def __len__(self) -> int:
        return len(self.words) + len(self.patterns)

    def apply(self, text: str) -> str:
        """`text` with every word entry, then every pattern, replaced by its spoken form."""
        if self._word_pattern is not None:
            text = self._word_pattern.sub(lambda m: self.words[m.group(0)], text)
        for pattern, say in self.patterns:
            text = pattern.sub(say, text)
        return text


def reload_lexicon(path: str | Path | None, current: Lexicon | None) -> Lexicon | None:
    """For SIGHUP: the file's lexicon now, or the current one (with the reason logged) if it does not load.

    A typo in the lexicon must not silence the appliance nor drop the entries that worked.
    """
    if path is None:
        return None
    try:
        lexicon = Lexicon.load(path)
    except ConfigError as exc:
        log.error("lexicon not reloaded, keeping the previous one: %s", exc)
        return current
    log.info("lexicon %s loaded: %d words, %d patterns", path, len(lexicon.words), len(lexicon.patterns))
    return lexicon


def _string_mapping(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping of text -> spoken form")
    result: dict[str, str] = {}
    for key, said in value.items():
        if not isinstance(key, str | int | float) or isinstance(key, bool) or str(key).strip() == "":
            raise ConfigError(f"{where}: entry {key!r} must be non-empty text")
        if not isinstance(said, str | int | float) or isinstance(said, bool):
            raise ConfigError(f"{where}[{key!r}]: spoken form must be text, got {type(said).__name__}")
        result[str(key)] = str(said)
    return result


def _compile(pattern: str, say: str, where: str) -> tuple[re.Pattern[str], str]:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}: not a valid regular expression: {exc}") from exc
    for number, name in _GROUP_REFERENCE.findall(say):
        if number and int(number) > compiled.groups:
            raise ConfigError(
                f"{where}: spoken form refers to group {number}, the pattern has {compiled.groups}"
            )
        if name and name not in compiled.groupindex and not (name.isdigit() and int(name) <= compiled.groups):
            raise ConfigError(f"{where}: spoken form refers to unknown group {name!r}")
    return compiled, say
