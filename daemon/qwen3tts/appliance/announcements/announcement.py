"""The announcement record: what a publisher asked for, as accepted and spooled.

One frozen record per accepted announcement: its text, voice, priority, zones, repeats and expiry, where
the answers go, and where it stands between plays (its place in the queue, the plays done, the sentence
a resumed play starts from, the attempts). Only the queue makes a changed copy of it (`dataclasses.replace`,
announced by a spool write); what happens while it is spoken is a `Play` (play.py), dropped at its end.
Nothing recovers meaning from reason strings.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from qwen3tts.appliance.announcements.media_audio import MediaAudio
from qwen3tts.appliance.priority import Priority

if TYPE_CHECKING:
    from qwen3tts.text import Piece


class Cut(enum.Enum):
    """Why the announcer cut a play short."""

    BARGE_IN = "an emergency announcement barged in"
    TAKEOVER = "a priority announcement took over"
    STOP = "stopped"
    SHUTDOWN = "shutdown"
    FAILURE = "failed"


@dataclass(frozen=True, eq=False)
class Announcement:
    """One accepted announcement (compared by identity: the queue holds the current copy)."""

    id: str
    text: str
    priority: Priority = Priority.NORMAL
    lang: str | None = None
    voice: str | None = None
    instruct: str | None = None
    volume: float | None = None
    chime: str | None = None
    interrupt: bool = False
    """Barge in on a lower-priority announcement; defaults to True for priority and emergency."""
    repeat: int = 1
    """How many times it plays in all."""
    repeat_interval: float = 0.0
    expires_at: float | None = None
    """Unix time after which it must not start; None never expires."""
    response_topic: str | None = None
    correlation_data: bytes | None = None
    hermes_site_id: str | None = None
    """Set when it came over the Hermes bridge: sayFinished goes back to this siteId."""
    session_id: str | None = None
    normalize: bool | None = None
    """Normalise the text (numbers, dates, units) before synthesis; None follows the setting."""
    ssml: bool | None = None
    """Read `text` as SSML; None when it starts with `<speak` (the intake checked the document)."""
    seed: int | None = None
    """Sampling seed for a reproducible rendition; None draws one."""
    cache: bool | None = None
    """Whether the audio cache may serve or keep this rendition; None follows the setting."""
    zones: tuple[str, ...] = ()
    """The zones it addresses; empty is an all-call (every zone of this box)."""
    seq: int = 0
    """Arrival order, given by the queue; also the spool file name."""
    message_id: int | None = None
    """The MQTT packet id it arrived with (QoS 1): a redelivery of it after a crash is recognised."""
    plays_done: int = 0
    not_before: float = 0.0
    cursor: int = 0
    """First sentence still to play: where a resumed announcement starts again."""
    attempts: int = 0
    """Times it became the playing announcement without ending in order; the spool quarantines it at
    `announcements.max_attempts` (a process that died on it twice)."""
    t_queued: float = 0.0
    warnings: tuple[str, ...] = field(default=(), metadata={"runtime": True})
    """Why part of the request was ignored (the intake's); said in the `queued` event, never spooled."""
    pieces: tuple[Piece, ...] = field(default=(), repr=False, metadata={"runtime": True})
    """Its whole text as the text front end read it, piece by piece with the SSML marks: read once, on
    the thread that hands it to the announcer (`LookAhead.read`); empty until then. Never spooled: a
    replayed announcement is read again when the spool is loaded."""
    reading: tuple[str, ...] = field(default=(), metadata={"runtime": True})
    """What the text front end could not read well; said in `started`."""
    unreadable: str | None = field(default=None, metadata={"runtime": True})
    """Why its text could not be read (the front end's reason); it fails with it when it would play."""
    media: MediaAudio | None = field(default=None, repr=False, metadata={"runtime": True})
    """Pre-rendered audio it plays instead of speaking `text` (then its title), with who hears of its
    steps (media.py); None for text. Never spooled: it is lost with the process."""

    def rank(self) -> tuple[int, int]:
        """Sort key: most urgent first, then first come first served."""
        return (-int(self.priority), self.seq)

    @property
    def spooled(self) -> bool:
        """Whether the spool keeps it: text does, media lives in memory only (media.py)."""
        return self.media is None

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def to_json(self) -> dict[str, Any]:
        obj = {f.name: getattr(self, f.name) for f in fields(self) if not f.metadata.get("runtime")}
        obj["correlation_data"] = self.correlation_data.hex() if self.correlation_data is not None else None
        obj["priority"] = self.priority.label
        obj["zones"] = list(self.zones)
        return obj

    @classmethod
    def from_json(cls, obj: object) -> Announcement:
        """The announcement a spool file holds; ValueError naming the first field that is not as written."""
        if not isinstance(obj, dict):
            raise ValueError(f"a spooled announcement must be a JSON object, got {type(obj).__name__}")
        spooled = {f.name for f in fields(cls) if not f.metadata.get("runtime")}
        unknown = sorted(set(obj) - spooled - _NO_LONGER_SPOOLED, key=str)
        if unknown:
            raise ValueError(f"unknown fields {unknown[:5]}")
        for name in ("id", "text"):
            if not isinstance(obj.get(name), str):
                raise ValueError(f"field {name!r} must be a string")
        values = {name: _spooled_value(name, value) for name, value in obj.items() if name in spooled}
        return cls(**values)


_OPTIONAL_STR = ("lang", "voice", "instruct", "chime", "response_topic", "hermes_site_id", "session_id")
_OPTIONAL_NUMBER = ("volume", "expires_at")
_NO_LONGER_SPOOLED = {"t_started", "t_first_audio", "t_finished"}
"""Times of the last play, spooled by earlier versions: a file with them still reads (they are a play's)."""
_NUMBER = ("repeat_interval", "not_before", "t_queued")
_COUNT = ("repeat", "seq", "plays_done", "cursor", "attempts")
_OPTIONAL_BOOL = ("normalize", "ssml", "cache")


def _spooled_value(name: str, value: object) -> object:
    """One field of a spool file, checked for its type (a file is as hostile as any other input)."""
    if name in ("id", "text"):
        return value
    if name == "priority":
        level = Priority.announcement_level(value) if isinstance(value, str) else None
        if level is None:
            raise ValueError(f"field 'priority' is not an announcement level: {value!r:.40}")
        return level
    if name == "correlation_data":
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("field 'correlation_data' must be hex text")
        return bytes.fromhex(value)
    if name == "interrupt" and isinstance(value, bool):
        return value
    if name == "zones" and isinstance(value, list) and all(isinstance(z, str) for z in value):
        return tuple(value)
    if name in _OPTIONAL_STR and (value is None or isinstance(value, str)):
        return value
    if name in _OPTIONAL_BOOL and (value is None or isinstance(value, bool)):
        return value
    count_or_none = value is None or (isinstance(value, int) and not isinstance(value, bool))
    if name in ("seed", "message_id") and count_or_none:
        return value
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if name in _OPTIONAL_NUMBER and (value is None or number):
        return value
    if name in _NUMBER and number:
        return value
    if name in _COUNT and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"field {name!r} has a bad value: {value!r:.40}")
