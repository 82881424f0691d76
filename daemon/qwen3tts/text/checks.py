"""Hostile text from any door: the checks every door applies, with the same reasons.

MQTT payloads, HTTP bodies and Wyoming events all arrive as bytes from someone else. Here they become
text, or a `RequestError` with a short reason, never a traceback:

- `decode_text`: strict UTF-8 (encoded surrogates are refused too), a leading BOM dropped;
- `decode_json_object`: a JSON object, nesting and number sizes bounded *before* `json.loads` recurses
  or converts (a body nested 30,000 deep is a clear error, not a RecursionError), NaN and Infinity
  refused, every string (keys too) checked by `check_clean`;
- `check_clean`: Unicode scalar text (no lone surrogates) without control characters;
- `checked_text`: what may be spoken — clean, not empty, not only zero-width characters, not too long;
- `quote`: how input appears in events and logs, escaped and shortened.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any

from qwen3tts.errors import RequestError

MAX_JSON_DEPTH = 16
"""Deepest nesting of objects/arrays accepted (ours are flat; a little room for extras)."""
MAX_NUMBER_CHARS = 32
"""Longest number literal accepted in JSON (a Unix time in ms has 13 digits)."""
QUOTE_CHARS = 200
"""At most this much of any input is echoed in an event or a log line."""

# A string literal (to its closing quote, or to the end when unterminated, so every quote is scanned
# once: linear even for `"\"\"\"...`), or a bracket outside strings.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)
_LINE_BREAKS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TEXT_CONTROLS_OK = frozenset("\n\r\t")


class InvalidText(RequestError):
    """A string refused by `check_clean`; `name` says where it was (`text`, `field 'input'`, ...)."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """`value` as a quoted, escaped, shortened string that is safe in one log line or event."""
    text = value if isinstance(value, str) else repr(value)
    shown, rest = text[:limit], len(text) - limit
    escaped = "".join(_escape_char(c) for c in shown)
    return f"'{escaped}'" + (f"…(+{rest} characters)" if rest > 0 else "")


def _escape_char(c: str) -> str:
    if c in _LINE_BREAKS:
        return _LINE_BREAKS[c]
    if c in "'\\":
        return "\\" + c
    if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"):
        return f"\\u{ord(c):04x}"
    return c


def decode_text(payload: bytes) -> str:
    """The payload as UTF-8 (strict: encoded surrogates are refused too), without a leading BOM."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(f"payload is not valid UTF-8 (byte {exc.start})") from None
    return text.removeprefix("\ufeff")


def decode_json_object(text: str) -> dict[str, Any]:
    """A JSON object from `text`, bounded in depth and number size, every string checked."""
    check_depth(text)
    try:
        value = json.loads(text, parse_int=_parse_int, parse_float=_parse_float,
                           parse_constant=_refuse_constant)  # fmt: skip
    except json.JSONDecodeError as exc:
        raise RequestError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(value, dict):
        raise RequestError(f"JSON payload must be an object, got {type(value).__name__}")
    _check_strings(value, "payload")
    return value


def check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_JSON_DEPTH before json.loads recurses into it."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        depth += 1 if token in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            raise RequestError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def _parse_int(literal: str) -> int:
    if len(literal) > MAX_NUMBER_CHARS:
        raise RequestError(f"number too long ({len(literal)} characters > {MAX_NUMBER_CHARS})")
    return int(literal)


def _parse_float(literal: str) -> float:
    if len(literal) > MAX_NUMBER_CHARS:
        raise RequestError(f"number too long ({len(literal)} characters > {MAX_NUMBER_CHARS})")
    value = float(literal)
    if not math.isfinite(value):
        raise RequestError(f"number out of range: {quote(literal)}")
    return value


def _refuse_constant(name: str) -> float:
    raise RequestError(f"{name} is not a number this appliance accepts")


def _check_strings(value: Any, where: str) -> None:
    """Every key and string value must be scalar Unicode text without control characters."""
    if isinstance(value, str):
        check_clean(where, value, allow_line_breaks=True)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_clean(f"key {quote(key, 40)}", key, allow_line_breaks=False)
            _check_strings(item, f"field {quote(key, 40)}")
    elif isinstance(value, list):
        for item in value:
            _check_strings(item, where)


def check_clean(name: str, text: str, *, allow_line_breaks: bool) -> str:
    """`text` unchanged if it is Unicode scalar text free of control characters, else InvalidText."""
    for index, c in enumerate(text):
        if "\ud800" <= c <= "\udfff":
            raise InvalidText(name, f"{name} is not valid Unicode text (lone surrogate at character {index})")
        if unicodedata.category(c) == "Cc" and not (allow_line_breaks and c in _TEXT_CONTROLS_OK):
            message = f"{name} contains a control character (U+{ord(c):04X} at character {index})"
            raise InvalidText(name, message)
    return text


def has_speakable_text(text: str) -> bool:
    """False for text that is only white space, zero-width, BOM or other invisible format characters."""
    return any(not c.isspace() and unicodedata.category(c) != "Cf" for c in text)


def checked_text(raw: str, max_chars: int, name: str = "text") -> str:
    """The text to speak, stripped: clean, not empty, something visible in it, at most `max_chars`."""
    text = check_clean(name, raw, allow_line_breaks=True).strip()
    if not text:
        raise InvalidText(name, "empty text")
    if not has_speakable_text(text):
        raise InvalidText(name, "text has nothing to speak (only invisible zero-width or BOM characters)")
    if len(text) > max_chars:
        raise InvalidText(name, f"text too long ({len(text)} characters > {max_chars})")
    return text
