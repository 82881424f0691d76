"""The fleet at a glance: every box on the broker, from its retained `status` and `availability`.

`qwen3tts fleet` reads the retained messages under `<prefix>/+/status` and `<prefix>/+/availability`
(probe.py) and turns them into one row per box. A box whose availability says `offline` (its will, or its
orderly stop) is shown offline, with the state its last status had. Retained messages are anyone's to
write: every field is checked for its type, anything else is shown as `?` and never raises.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

UNKNOWN = "?"
TEXT_MAX_CHARS = 80


def fleet_filters(prefix: str) -> list[str]:
    return [f"{prefix}/+/status", f"{prefix}/+/availability"]


@dataclass
class Box:
    """One box as its retained messages describe it."""

    site: str
    availability: str = "unknown"
    """online | offline | unknown (nothing retained)."""
    status: dict = field(default_factory=dict)
    problem: str = ""
    """Why its status could not be read (empty when it could)."""

    def row(self) -> dict[str, object]:
        """The box as `--json` prints it."""
        s = self.status
        state = _text(s.get("state"))
        return {
            "site": self.site,
            "availability": self.availability,
            "state": "offline" if self.availability == "offline" else state,
            "last_state": state,
            "queue_depth": _count(s.get("queue_depth")),
            "current_id": _text(s.get("current_id"), none=None),
            "zones": _zones(s.get("zones")),
            "pool": _small_dict(s.get("pool")),
            "engine": _small_dict(s.get("engine")),
            "thermal_level": _text(s.get("thermal_level")),
            "version": _text(s.get("version")),
            "bundle": _text(s.get("bundle")),
            "problem": self.problem or _text(s.get("problem"), none=""),
        }


def boxes(prefix: str, retained: list[tuple[str, bytes]]) -> list[Box]:
    """One `Box` per site that has a retained status or availability, sorted by site."""
    found: dict[str, Box] = {}
    for topic, payload in retained:
        levels = topic.split("/")
        if len(levels) != 3 or levels[0] != prefix or levels[2] not in ("status", "availability"):
            continue
        box = found.setdefault(levels[1], Box(levels[1]))
        if levels[2] == "availability":
            box.availability = {b"online": "online", b"offline": "offline"}.get(payload, "unknown")
            continue
        try:
            obj = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            box.problem = f"status unreadable: {type(exc).__name__}"
            continue
        if not isinstance(obj, dict):
            box.problem = "status is not a JSON object"
            continue
        box.status, box.problem = obj, ""
    return [found[site] for site in sorted(found)]


def table(rows: list[dict[str, object]]) -> str:
    """The rows as an aligned text table, one box per line."""
    head = ("SITE", "AVAILABILITY", "STATE", "QUEUE", "POOL", "ZONES", "ENGINE", "VERSION")
    lines = [head] + [
        (
            _printable(str(r["site"])),
            str(r["availability"]),
            str(r["state"]),
            str(r["queue_depth"]),
            _pool_cell(r["pool"]),
            ",".join(r["zones"]) if isinstance(r["zones"], list) else str(r["zones"]),
            _engine_cell(r["engine"]),
            str(r["version"]),
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    aligned = ("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) for cells in lines)
    return "\n".join(line.rstrip() for line in aligned)


def _text(value: object, none: object = UNKNOWN) -> object:
    if value is None:
        return none
    if not isinstance(value, str):
        return UNKNOWN
    return _printable(value)


def _printable(text: str) -> str:
    """`text` safe on one terminal line: at most 80 characters, anything unprintable escaped."""
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text[:TEXT_MAX_CHARS])
    return shown + ("…" if len(text) > TEXT_MAX_CHARS else "")


def _count(value: object) -> object:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else UNKNOWN


def _zones(value: object) -> object:
    """The zones the status names (a list of names, or an object by zone name); [] when it has none."""
    if value is None:
        return []
    names = list(value) if isinstance(value, list | dict) else None
    if names is None or not all(isinstance(n, str) for n in names):
        return UNKNOWN
    return [str(_text(n)) for n in names[:32]]


def _small_dict(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        return {}
    return {
        str(_text(k)): v if isinstance(v, int | float | bool) else _text(v)
        for k, v in list(value.items())[:16]
        if isinstance(k, str)
    }


def _pool_cell(pool: object) -> str:
    if not isinstance(pool, dict) or "group" not in pool:
        return "-"
    return f"{pool['group']}:{pool.get('state', UNKNOWN)}"


def _engine_cell(engine: object) -> str:
    if not isinstance(engine, dict) or not engine:
        return "-"
    running, most = engine.get("running", UNKNOWN), engine.get("max_batch", UNKNOWN)
    return f"{running}/{most} {engine.get('frames_per_second', UNKNOWN)} fps"
