"""The site lexicon's patterns, matched by RE2: time linear in the text, whatever the pattern.

A lexicon pattern comes from an operator's file and runs on text from anyone. Python's `re` backtracks:
`(\\w+\\s?)+$` takes seconds on 22 characters and days on 40, holding the interpreter lock all along,
so one such entry and one request would freeze the daemon. RE2 (the google-re2 binding) matches in
time linear in the text and refuses, at compile time, what it cannot do in linear time
(back-references, look-around, atomic groups, possessive repetition), so a pattern that loads is safe
and one that is not safe does not load.

RE2's classes are ASCII, unlike Python's: `\\w`, `\\d` and `\\b` see Latin letters and 0-9 only, so
`\\bcafé\\b` does not match "café" (é is not a word character). Write `\\p{L}` for a letter of any script,
or put whole words in the lexicon's `words:` section, which is Unicode-aware.

The spoken form is a template read here, not by the binding (its expansion mangles non-ASCII text):
`\\1`..`\\99` and `\\g<name>` / `\\g<1>` insert a group, `\\\\` a backslash; any other escape is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import re2

from qwen3tts.errors import ConfigError

# A backslash and what follows it in a spoken form (no nested repetition: linear in Python's re).
_ESCAPE = re.compile(r"\\(?:(\d{1,2})|g<([^<>]*)>|(.)|$)", re.DOTALL)
# What RE2 refuses that people write in Python patterns, and what to write instead.
_HINTS = (
    ("(?=", "look-ahead is not supported: match the text and put it back in the spoken form"),
    ("(?!", "negative look-ahead is not supported"),
    ("(?<=", "look-behind is not supported: match the text and put it back in the spoken form"),
    ("(?<!", "negative look-behind is not supported"),
    ("(?>", "atomic groups are not supported"),
    ("\\Z", "write \\z for the end of the text"),
)
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every refused pattern on stderr


@dataclass(frozen=True)
class LexiconPattern:
    """One compiled pattern and its spoken form, split into literal text and group numbers or names."""

    source: str
    regexp: re2._Regexp
    spoken: tuple[str | int, ...]

    def sub(self, text: str) -> str:
        """`text` with every non-empty match replaced (an empty match replaces nothing)."""
        return self.regexp.sub(self._expand, text)

    def __reduce__(self):
        # The RE2 object does not pickle: its source does, compiled again where it arrives (the text
        # front end's worker process, text/guard.py). It compiled here, so it compiles there.
        return (_recompiled, (self.source, self.spoken))

    def _expand(self, match) -> str:
        if match.start() == match.end():
            return ""
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in self.spoken)


def compile_pattern(pattern: str, say: str, where: str) -> LexiconPattern:
    """The RE2 form of `pattern`; ConfigError naming `where` if RE2 refuses it or `say` is malformed."""
    try:
        regexp = re2.compile(pattern, _OPTIONS)
    except UnicodeEncodeError:
        raise ConfigError(f"{where}: the pattern holds a lone surrogate (not valid Unicode text)") from None
    except re2.error as exc:
        hint = next((h for token, h in _HINTS if token in pattern), "")
        reason = exc.args[0] if exc.args else exc
        detail = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else reason
        raise ConfigError(
            f"{where}: not a valid regular expression for RE2, which matches in linear time ({detail})"
            + (f"; {hint}" if hint else "")
        ) from None
    return LexiconPattern(pattern, regexp, _parse_spoken(say, regexp, where))


def _recompiled(source: str, spoken: tuple[str | int, ...]) -> LexiconPattern:
    return LexiconPattern(source, re2.compile(source, _OPTIONS), spoken)


def _parse_spoken(say: str, regexp, where: str) -> tuple[str | int, ...]:
    pieces: list[str | int] = []
    position = 0
    for escape in _ESCAPE.finditer(say):
        pieces.append(say[position : escape.start()])
        position = escape.end()
        number, name, other = escape.groups()
        if number is not None or (name is not None and name.isdigit()):
            group = int(number if number is not None else name)
            if not 1 <= group <= regexp.groups and not (name is not None and group == 0):
                raise ConfigError(
                    f"{where}: spoken form refers to group {group}, the pattern has {regexp.groups}"
                )
            pieces.append(group)
        elif name is not None:
            if name not in regexp.groupindex:
                raise ConfigError(f"{where}: spoken form refers to unknown group {name!r}")
            pieces.append(regexp.groupindex[name])
        elif other == "\\":
            pieces.append("\\")
        else:
            shown = "\\" + (other or "")
            raise ConfigError(f"{where}: spoken form has the escape {shown!r} (use \\1, \\g<name> or \\\\)")
    pieces.append(say[position:])
    return tuple(p for p in pieces if p != "")
