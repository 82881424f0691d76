"""The site lexicon: how this site says its own words, applied before normalisation.

A YAML file with two optional mappings:

    words:                 # whole words or phrases, case-sensitive, never inside another word
      Qwen3: Qwen three
      Rd.: Road
    patterns:              # RE2 regular expressions; the spoken form may use \\1 or \\g<name>
      '\\bPl\\. (\\d+)': 'Platform \\1'

Words are replaced in one pass (the longest entry first), so a replacement is never replaced again;
patterns then run in file order, each matched by RE2 in time linear in the text (lexicon_patterns.py).
A pattern that would make a piece grow past `MAX_GROWTH` is skipped for that piece, with a warning.
The file is read once and again on SIGHUP: a file that does not load (too large, malformed, a pattern
RE2 refuses) raises ConfigError naming the entry, and the caller keeps the lexicon it had.
"""

from __future__ import annotations

import logging
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from qwen3tts.errors import ConfigError
from qwen3tts.text.lexicon_patterns import LexiconPattern, compile_pattern

log = logging.getLogger(__name__)

# Bounds on a file that is read on every SIGHUP and applied to every piece: the word alternation costs
# time in proportion to its entries (8 ms for 5,000 words on 2,000 characters), each pattern a pass.
MAX_FILE_BYTES = 1 << 20
MAX_WORDS = 10_000
MAX_PATTERNS = 1_000
MAX_ENTRY_CHARS = 500
# A pattern may make a piece at most this many times longer (plus a little): chained patterns that
# each double the text would otherwise grow a piece exponentially.
MAX_GROWTH, GROWTH_SLACK = 4, 200


@dataclass(frozen=True)
class Lexicon:
    words: dict[str, str] = field(default_factory=dict)
    patterns: tuple[LexiconPattern, ...] = ()
    source: str = ""
    _word_pattern: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.words:  # one alternation, longest entry first, so "Qwen3 Max" wins over "Qwen3"
            # Escaped literals between one-character look-arounds: no nested repetition, so Python's
            # re tries each entry once per position (linear in the text); Unicode-aware word edges.
            ordered = sorted(self.words, key=len, reverse=True)
            alternatives = "|".join(re.escape(word) for word in ordered)
            object.__setattr__(self, "_word_pattern", re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)"))

    @classmethod
    def load(cls, path: str | Path) -> Lexicon:
        path = Path(path)
        try:
            status = path.stat()
            if not stat.S_ISREG(status.st_mode):  # a FIFO or a device would block or never end
                raise ConfigError(f"text.lexicon: {path} is not a regular file")
            if status.st_size > MAX_FILE_BYTES:
                raise ConfigError(f"text.lexicon: {path} is larger than {MAX_FILE_BYTES} bytes")
            data = yaml.safe_load(path.read_bytes().decode("utf-8"))
        except OSError as exc:
            raise ConfigError(f"text.lexicon: cannot read {path}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"text.lexicon: {path} is not UTF-8 text (byte {exc.start})") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"text.lexicon: {path} is not valid YAML: {exc}") from exc
        return cls.from_dict(data if data is not None else {}, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "lexicon") -> Lexicon:
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping with 'words' and/or 'patterns'")
        unknown = sorted(set(map(str, data)) - {"words", "patterns"})
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)} (known: words, patterns)")
        words = _string_mapping(data.get("words"), f"{source}: words", MAX_WORDS)
        spoken = _string_mapping(data.get("patterns"), f"{source}: patterns", MAX_PATTERNS)
        patterns = tuple(
            compile_pattern(key, say, f"{source}: patterns[{key!r}]") for key, say in spoken.items()
        )
        return cls(words=words, patterns=patterns, source=source)

    def __len__(self) -> int:
        return len(self.words) + len(self.patterns)

    def apply(self, text: str, warnings: list[str] | None = None) -> str:
        """`text` with every word entry, then every pattern, replaced by its spoken form.

        A pattern whose result would exceed the growth bound is skipped here; why is appended to
        `warnings` (when given).
        """
        if self._word_pattern is not None:
            text = self._word_pattern.sub(lambda m: self.words[m.group(0)], text)
        limit = MAX_GROWTH * len(text) + GROWTH_SLACK
        for pattern in self.patterns:
            rewritten = pattern.sub(text)
            if len(rewritten) > limit:
                if warnings is not None:
                    warnings.append(
                        f"lexicon pattern {pattern.source!r} skipped: it made {len(text)} characters "
                        f"into {len(rewritten)}"
                    )
                continue
            text = rewritten
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


def _string_mapping(value: Any, where: str, max_entries: int) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping of text -> spoken form")
    if len(value) > max_entries:
        raise ConfigError(f"{where}: {len(value)} entries, at most {max_entries}")
    result: dict[str, str] = {}
    for key, said in value.items():
        if not isinstance(key, str | int | float) or isinstance(key, bool) or str(key).strip() == "":
            raise ConfigError(f"{where}: entry {str(key)[:80]!r} must be non-empty text")
        if not isinstance(said, str | int | float) or isinstance(said, bool):
            raise ConfigError(f"{where}[{key!r}]: spoken form must be text, got {type(said).__name__}")
        for text in (str(key), str(said)):
            if len(text) > MAX_ENTRY_CHARS:
                raise ConfigError(f"{where}[{str(key)[:80]!r}]: longer than {MAX_ENTRY_CHARS} characters")
        result[str(key)] = str(said)
    return result
