"""The announcement record: one accepted announcement, from intake to its last event.

The first block of fields is what a publisher asked for and what the spool keeps; the second block is
the announcer's working state (sentences, engine handles, PCM buffer, playback track) and is never
written to disk. Only the announcer changes `status`; nothing recovers meaning from reason strings.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from qwen3tts.appliance.messages import PRIORITIES

if TYPE_CHECKING:
    import numpy as np

    from qwen3tts.appliance.jitter import PcmBuffer
    from qwen3tts.appliance.playback import Track
    from qwen3tts.engine.sequence import Handle


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


@dataclass
class Sentence:
    """One sentence of an announcement and its synthesis."""

    text: str
    handle: Handle | None = None
    """The engine request while it runs; None before submission and after the PCM is all buffered."""
    samples: int = 0
    """Samples of this sentence moved into the announcement's buffer so far."""
    done: bool = False
    """Every sample of this sentence is in the buffer."""
    t_streaming: float = 0.0
    """Monotonic time its first PCM arrived (submission time until then); for the speed measurement."""


@dataclass
class Announcement:
    """One accepted announcement and everything that happens to it until it is gone."""

    id: str
    text: str
    priority: str = "normal"
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
    seed: int | None = None
    """Sampling seed for a reproducible rendition; None draws one."""
    cache: bool | None = None
    """Whether the audio cache may serve or keep this rendition; None follows the setting."""
    seq: int = 0
    """Arrival order, given by the queue; also the spool file name."""
    plays_done: int = 0
    not_before: float = 0.0
    cursor: int = 0
    """First sentence still to play: where a resumed announcement starts again."""
    attempts: int = 0
    """Times it became the playing announcement without ending in order; the spool quarantines it at
    `announcements.max_attempts` (a process that died on it twice)."""
    t_queued: float = 0.0
    t_started: float | None = None
    t_first_audio: float | None = None
    t_finished: float | None = None

    # ---- the announcer's working state (never spooled) ----
    status: AnnouncementStatus = field(default=AnnouncementStatus.QUEUED, metadata={"runtime": True})
    sentences: list[Sentence] = field(default_factory=list, metadata={"runtime": True})
    """The sentences from `cursor` on, for this play; empty until the announcer first looks at it."""
    buffer: PcmBuffer | None = field(default=None, metadata={"runtime": True})
    track: Track | None = field(default=None, metadata={"runtime": True})
    """What the audio thread plays while this is the current announcement."""
    cut_at: int | None = field(default=None, metadata={"runtime": True})
    """Index into `sentences` where a takeover ends this play (no sentence from there is played)."""
    cut: Cut | None = field(default=None, metadata={"runtime": True})
    error: str | None = field(default=None, metadata={"runtime": True})
    from_cache: bool = field(default=False, metadata={"runtime": True})
    """This play's audio came from the phrase cache or the first rendition (no synthesis)."""
    rendition: list[np.ndarray] | None = field(default=None, metadata={"runtime": True})
    """PCM of this play as synthesised, collected for the phrase cache (phrase_replay.py)."""
    rendition_key: str | None = field(default=None, metadata={"runtime": True})
    replay: np.ndarray | None = field(default=None, metadata={"runtime": True})
    """The first rendition's audio, kept for the repeats that follow."""

    def rank(self) -> tuple[int, int]:
        """Sort key: most urgent first, then first come first served."""
        return (-PRIORITIES.index(self.priority), self.seq)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def handles(self) -> list[Handle]:
        return [s.handle for s in self.sentences if s.handle is not None]

    def cancel_synthesis(self) -> None:
        """Cancel every engine request of this announcement at once and forget its PCM."""
        for sentence in self.sentences:
            if sentence.handle is not None:
                sentence.handle.cancel()
        self.sentences = []
        if self.buffer is not None:
            self.buffer.abandon()
        self.buffer, self.track, self.cut_at, self.cut = None, None, None, None

    def to_json(self) -> dict[str, Any]:
        obj = {f.name: getattr(self, f.name) for f in fields(self) if not f.metadata.get("runtime")}
        obj["correlation_data"] = self.correlation_data.hex() if self.correlation_data is not None else None
        return obj

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Announcement:
        obj = dict(obj)
        runtime = {f.name for f in fields(cls) if f.metadata.get("runtime")}
        if runtime & obj.keys():
            raise ValueError(f"spooled announcement carries working state {sorted(runtime & obj.keys())}")
        if obj.get("correlation_data") is not None:
            obj["correlation_data"] = bytes.fromhex(obj["correlation_data"])
        ann = cls(**obj)
        if not isinstance(ann.id, str) or not isinstance(ann.text, str) or ann.priority not in PRIORITIES:
            raise ValueError("announcement has a bad id, text or priority")
        return ann
