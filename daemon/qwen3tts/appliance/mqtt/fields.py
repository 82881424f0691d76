"""Typed fields of a decoded JSON payload: each reader returns the value or raises RequestError.

`bool` is never a number, numbers are finite, ids follow `payload.ID_PATTERN`, names are short
one-line strings. Absent (or null) fields read as the default.
"""

from __future__ import annotations

import math
import re
from typing import Any

from qwen3tts.appliance.mqtt.payload import check_clean, check_id, quote
from qwen3tts.appliance.priority import ANNOUNCEMENT_LEVELS, Priority
from qwen3tts.errors import RequestError
from qwen3tts.settings import ZONE_NAME_PATTERN

NAME_MAX_CHARS = 64
"""Longest voice, language, chime or priority name accepted."""
SESSION_MAX_CHARS = 256
"""Longest sessionId / siteId accepted."""
SEED_MAX = 2**32 - 1
MAX_ZONES = 32
"""Most zones one say may name (a box with more zones takes an all-call for all of them)."""


def field_of(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    """obj[key] if it has the expected type (bool is never a number), else a RequestError."""
    value = obj.get(key)
    if value is None:
        return default
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise RequestError(f"field {key!r} must be {_kind_name(kinds)}, got bool")
    if not isinstance(value, kinds):
        raise RequestError(f"field {key!r} must be {_kind_name(kinds)}, got {type(value).__name__}")
    return value


def number_of(obj: dict[str, Any], key: str) -> float | None:
    """A finite number field (ints become floats), None when absent."""
    value = field_of(obj, key, (int, float))
    if value is None:
        return None
    value = float(value)  # ints are at most MAX_NUMBER_CHARS digits, so this cannot overflow to inf
    if not math.isfinite(value):
        raise RequestError(f"field {key!r} must be a finite number")
    return value


def id_of(obj: dict[str, Any], key: str = "id") -> str | None:
    value = field_of(obj, key, str)
    return None if value is None else check_id(f"field {key!r}", value)


def _kind_name(kinds: tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "a boolean", dict: "an object",
             list: "a list"}  # fmt: skip
    if float in kinds:
        kinds = tuple(k for k in kinds if k is not int)  # an int is a number too
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def name_of(obj: dict[str, Any], key: str, limit: int = NAME_MAX_CHARS) -> str | None:
    """A short one-line string field (voice, language, chime, sessionId), else RequestError."""
    value = field_of(obj, key, str)
    if value is None:
        return None
    check_clean(f"field {key!r}", value, allow_line_breaks=False)
    if len(value) > limit:
        raise RequestError(f"field {key!r} too long ({len(value)} characters > {limit})")
    return value


def chime_of(obj: dict[str, Any]) -> str | None:
    """`chime`: true means the default chime, false none, else one of CHIME_VALUES by name."""
    value = obj.get("chime")
    if isinstance(value, bool):
        return "default" if value else "none"
    chime = name_of(obj, "chime")
    return None if chime is None else chime.lower()  # validate.py `admit` checks the name


def seed_of(obj: dict[str, Any]) -> int | None:
    seed = field_of(obj, "seed", int)
    if seed is not None and not 0 <= seed <= SEED_MAX:
        raise RequestError(f"seed must be between 0 and {SEED_MAX}, got {seed}")
    return seed


def priority_of(obj: dict[str, Any]) -> Priority:
    """`priority`: one of the announcement levels by name (normal when absent)."""
    name = name_of(obj, "priority")
    if name is None:
        return Priority.NORMAL
    level = Priority.announcement_level(name)
    if level is None:
        expected = ", ".join(level.label for level in ANNOUNCEMENT_LEVELS)
        raise RequestError(f"unknown priority {quote(name)}; expected one of {expected}")
    return level


def zones_of(obj: dict[str, Any]) -> tuple[str, ...]:
    """`zones`: a list of at most MAX_ZONES zone names (duplicates dropped, order kept); () when absent,
    which is an all-call. validate.py `admit` checks that this box has them."""
    value = field_of(obj, "zones", list)
    if value is None:
        return ()
    if not value:
        raise RequestError("field 'zones' is empty; leave it out for an all-call")
    if len(value) > MAX_ZONES:
        raise RequestError(f"field 'zones' names {len(value)} zones (at most {MAX_ZONES})")
    for zone in value:
        if not isinstance(zone, str) or not re.fullmatch(ZONE_NAME_PATTERN, zone):
            shown = quote(zone, 40) if isinstance(zone, str) else type(zone).__name__
            raise RequestError(f"field 'zones': {shown} is not a zone name (1-64 of A-Z a-z 0-9 . _ -)")
    return tuple(dict.fromkeys(value))
