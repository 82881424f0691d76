"""The MQTT door's part of reading hostile payloads: ids, salvaging what a refused payload says, and the
JSON we publish. The checks every door shares (strict UTF-8, bounded JSON, clean text, quoting) are
qwen3tts.text.checks, re-exported here for the modules of this door.

`salvage()` reads what it can of a payload that failed validation (bounded, never raising), so a
rejection can still name the caller's id.
"""

from __future__ import annotations

import json
import re
from typing import Any

from qwen3tts.errors import RequestError
from qwen3tts.text.checks import (
    MAX_JSON_DEPTH,
    MAX_NUMBER_CHARS,
    QUOTE_CHARS,
    check_clean,
    check_depth,
    decode_json_object,
    decode_text,
    has_speakable_text,
    quote,
)

__all__ = [
    "MAX_JSON_DEPTH", "MAX_NUMBER_CHARS", "QUOTE_CHARS", "check_clean", "check_id", "decode_json_object",
    "decode_text", "encode_json", "has_speakable_text", "quote", "salvage", "salvage_id", "salvage_name",
]  # fmt: skip

ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}")
"""Announcement ids: letters, digits and . _ : - (UUIDs, ULIDs, `door:1`), 1 to 128 of them."""


def check_id(name: str, value: str) -> str:
    if not ID_PATTERN.fullmatch(value):
        raise RequestError(f"{name} {quote(value, 60)} is not a valid id (1-128 of A-Z a-z 0-9 . _ : -)")
    return value


SALVAGE_MAX_BYTES = 1 << 20
"""Payloads larger than this are not even read for an id (a too-large payload is rejected anyway)."""


def salvage(payload: bytes) -> dict[str, Any]:
    """What can be read of a payload that failed validation (bounded, never raises); {} if nothing.

    Numbers are read as None: a number that failed the bounds is no reason to lose the id beside it.
    """
    if len(payload) > SALVAGE_MAX_BYTES:
        return {}
    try:
        text = decode_text(payload)
        check_depth(text)
        value = json.loads(text, parse_int=_none, parse_float=_none, parse_constant=_none)
    except (RequestError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _none(_literal: str) -> None:
    return None


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
