"""The announcement record: one accepted announcement, from intake to its last event.

The first block of fields is what a publisher asked for and what the spool keeps; the second block is
the announcer's working state (the pieces of text as the model gets them, their engine handles, the track
the audio thread plays) and is never written to disk. Only the announcer's loop changes an announcement
once the intake has handed it over; nothing recovers meaning from reason strings.

Pieces: `pieces[i]` is the i-th piece of text from `cursor` on. Its PCM goes into the track in order, so
at any time pieces 0..len(ends)-1 are complete (`ends[i]` is the track sample where piece i ends), piece
len(ends) may be arriving, and the ones after it wait in their engine handles (`handles`, by index) or
have not been submitted yet.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from qwen3tts.engine.sequence import Priority

if TYPE_CHECKING:
    import numpy as np

    from qwen3tts.appliance.audio.track import Track
    from qwen3tts.engine.sequence import Handle
    from qwen3tts.tempo import TimeStretch
    from qwen3tts.text import Piece


class AnnouncementStatus(enum.Enum):
    QUEUED = "queued"
    SYNTHESIZING = "synthesizing"
    PLAYING = "playing"
    INTERRUPTED = "interrupted"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        final = (AnnouncementStatus.FINISHED, AnnouncementStatus.CANCELLED, AnnouncementStatus.EXPIRED)
        return self in (*final, AnnouncementStatus.FAILED)


class Cut(enum.Enum):
    """Why the announcer cut the playing announcement short."""

    BARGE_IN = "an emergency announcement barged in"
    TAKEOVER = "a priority announcement took over"
    STOP = "stopped"
    SHUTDOWN = "shutdown"
    FAILURE = "failed"


@dataclass(eq=False)
class Announcement:
    """One accepted announcement and everything that happens to it until it is gone (compared by identity)."""

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
    """First piece still to play: where a resumed announcement starts again."""
    attempts: int = 0
    """Times it became the playing announcement without ending in order; the spool quarantines it at
    `announcements.max_attempts` (a process that died on it twice)."""
    t_queued: float = 0.0
    t_started: float | None = None
    t_first_audio: float | None = None
    t_finished: float | None = None

    # ---- the announcer's working state (never spooled) ----
    status: AnnouncementStatus = field(default=AnnouncementStatus.QUEUED, metadata={"runtime": True})
    warnings: tuple[str, ...] = field(default=(), metadata={"runtime": True})
    """Why part of the request was ignored (the intake's); said in the `queued` event."""
    reading: tuple[str, ...] = field(default=(), metadata={"runtime": True})
    """What the text front end could not read well (set when it is prepared); said in `started`."""
    runaway: tuple[str, ...] = field(default=(), metadata={"runtime": True})
    """Sentences of this play the frame cap stopped (the model ran away); said in `finished`."""
    ack: Callable[[], object] | None = field(default=None, repr=False, metadata={"runtime": True})
    """Acknowledges the MQTT message it came in (QoS 1); called once, after it is spooled or refused."""
    pieces: list[Piece] = field(default_factory=list, metadata={"runtime": True})
    """The pieces from `cursor` on (what the model gets in `normalized`, SSML marks beside it: silence,
    chime, language, voice, rate); empty until the announcer prepares it."""
    handles: dict[int, Handle] = field(default_factory=dict, metadata={"runtime": True})
    """Engine requests of pieces whose PCM is not all in the track yet, by piece index."""
    ends: list[int] = field(default_factory=list, metadata={"runtime": True})
    """Track sample where each complete piece ends (pieces 0..len(ends)-1 are complete)."""
    arriving_since: float | None = field(default=None, metadata={"runtime": True})
    stretch: TimeStretch | None = field(default=None, repr=False, metadata={"runtime": True})
    """The time-scale modification of the arriving piece when its SSML rate is not 1."""
    """Monotonic time the first PCM of the arriving piece came (its speed is measured from there)."""
    track: Track | None = field(default=None, metadata={"runtime": True})
    """The PCM handed to the audio thread; made when its first piece is submitted."""
    cut_at: int | None = field(default=None, metadata={"runtime": True})
    """Piece index where a takeover ends this play (no piece from there is played)."""
    cut: Cut | None = field(default=None, metadata={"runtime": True})
    error: str | None = field(default=None, metadata={"runtime": True})
    from_cache: bool = field(default=False, metadata={"runtime": True})
    """This play's audio came from the phrase cache or the first rendition (no synthesis)."""
    rendition: list[np.ndarray] | None = field(default=None, metadata={"runtime": True})
    """PCM of this play as synthesised, collected for the phrase cache (phrase_replay.py)."""
    rendition_key: str | None = field(default=None, metadata={"runtime": True})
    replay: np.ndarray | None = field(default=None, metadata={"runtime": True})
    """The first rendition's audio, kept for the repeats that follow."""
    play_zones: tuple[str, ...] = field(default=(), metadata={"runtime": True})
    """The zones this play is heard in (its `zones`, or every zone), set when it starts."""
    zone_errors: dict[str, str] = field(default_factory=dict, metadata={"runtime": True})
    """Zones of this play whose output failed, with the error (each reported once)."""

    @property
    def playing_end(self) -> int:
        """Pieces this play may reach: all of them, or up to where a takeover ends it."""
        return len(self.pieces) if self.cut_at is None else self.cut_at

    @property
    def complete(self) -> bool:
        """Every piece this play reaches is in the track."""
        return len(self.ends) >= self.playing_end

    def rank(self) -> tuple[int, int]:
        """Sort key: most urgent first, then first come first served."""
        return (-int(self.priority), self.seq)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def ack_once(self) -> None:
        """Acknowledge the MQTT message this came in (once; replayed ones have nothing to acknowledge)."""
        ack, self.ack = self.ack, None
        if ack is not None:
            ack()

    def forget_synthesis(self) -> None:
        """Cancel every engine request of this play and drop its PCM (the track is abandoned)."""
        for handle in self.handles.values():
            handle.cancel()
        if self.track is not None:
            self.track.abandon()
        if self.stretch is not None:
            self.stretch.close()
        self.pieces, self.handles, self.ends, self.arriving_since = [], {}, [], None
        self.track, self.cut_at, self.cut, self.stretch = None, None, None, None
        self.play_zones, self.zone_errors = (), {}

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
        unknown = sorted(set(obj) - spooled, key=str)
        if unknown:
            raise ValueError(f"unknown fields {unknown[:5]}")
        for name in ("id", "text"):
            if not isinstance(obj.get(name), str):
                raise ValueError(f"field {name!r} must be a string")
        values = {name: _spooled_value(name, value) for name, value in obj.items()}
        return cls(**values)


_OPTIONAL_STR = ("lang", "voice", "instruct", "chime", "response_topic", "hermes_site_id", "session_id")
_OPTIONAL_NUMBER = ("volume", "expires_at", "t_started", "t_first_audio", "t_finished")
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
