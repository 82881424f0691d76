"""Reading hostile payloads safely: bounded JSON, typed fields, text and id checks, quoting.

Everything here turns a bad payload into a `RequestError` with a short reason, never into a
traceback: JSON nesting and number sizes are bounded *before* `json.loads` recurses or converts,
NaN and Infinity are refused, every decoded string (keys too) must be Unicode scalar text without
control characters. `quote()` is how input appears in events and logs: escaped so it cannot forge
a log line, and at most `QUOTE_CHARS` characters of it.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any

from qwen3tts.errors import RequestError

MAX_JSON_DEPTH = 16
"""Deepest nesting of objects/arrays accepted in a payload (ours is 1; a little room for extras)."""
MAX_NUMBER_CHARS = 32
"""Longest number literal accepted in JSON (a Unix time in ms has 13 digits)."""
QUOTE_CHARS = 200
"""At most this much of any input is echoed in an event or a log line."""
ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}")
"""Announcement ids: letters, digits and . _ : - (UUIDs, ULIDs, `door:1`), 1 to 128 of them."""

# A string literal (to its closing quote, or to the end when unterminated, so every quote is scanned
# once: linear even for `"\"\"\"...`), or a bracket outside strings.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)
_LINE_BREAKS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TEXT_CONTROLS_OK = frozenset("\n\r\t")


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
    value = _loads_bounded(text)
    _check_strings(value, "payload")
    return value


def _loads_bounded(text: str, *, lenient: bool = False) -> dict[str, Any]:
    """json.loads after the depth check; `lenient` (for salvaging strings) reads every number as None."""
    _check_depth(text)
    hooks: dict[str, Any] = {"parse_int": _parse_int, "parse_float": _parse_float}
    hooks["parse_constant"] = _refuse_constant
    if lenient:
        hooks = dict.fromkeys(("parse_int", "parse_float", "parse_constant"), _none)
    try:
        value = json.loads(text, **hooks)
    except json.JSONDecodeError as exc:
        raise RequestError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(value, dict):
        raise RequestError(f"JSON payload must be an object, got {type(value).__name__}")
    return value


def _check_depth(text: str) -> None:
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


def _none(_literal: str) -> None:
    return None


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
    """`text` unchanged if it is Unicode scalar text free of control characters, else RequestError."""
    for index, c in enumerate(text):
        if "\ud800" <= c <= "\udfff":
            raise RequestError(f"{name} is not valid Unicode text (lone surrogate at character {index})")
        if unicodedata.category(c) == "Cc" and not (allow_line_breaks and c in _TEXT_CONTROLS_OK):
            raise RequestError(f"{name} contains a control character (U+{ord(c):04X} at character {index})")
    return text


def has_speakable_text(text: str) -> bool:
    """False for text that is only white space, zero-width, BOM or other invisible format characters."""
    return any(not c.isspace() and unicodedata.category(c) != "Cf" for c in text)


def check_id(name: str, value: str) -> str:
    if not ID_PATTERN.fullmatch(value):
        raise RequestError(f"{name} {quote(value, 60)} is not a valid id (1-128 of A-Z a-z 0-9 . _ : -)")
    return value


SALVAGE_MAX_BYTES = 1 << 20
"""Payloads larger than this are not even read for an id (a too-large payload is rejected anyway)."""


def salvage(payload: bytes) -> dict[str, Any]:
    """What can be read of a payload that failed validation (bounded, never raises); {} if nothing."""
    if len(payload) > SALVAGE_MAX_BYTES:
        return {}
    try:
        return _loads_bounded(decode_text(payload), lenient=True)
    except RequestError:
        return {}


def salvage_id(payload: bytes, key: str = "id") -> str | None:
    """The caller's id from a payload that failed validation, if it is a valid id; else None."""
    value = salvage(payload).get(key)
    return value if isinstance(value, str) and ID_PATTERN.fullmatch(value) else None


def salvage_name(obj: dict[str, Any], key: str, limit: int = 256) -> str | None:
    """A short clean string field of a salvaged object, else None."""
    value = obj.get(key)
    if not isinstance(value, str) or len(value) > limit:
        return None
    try:
        return check_clean(key, value, allow_line_breaks=False)
    except RequestError:
        return None


def encode_json(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")
