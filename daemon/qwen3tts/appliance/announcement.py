"""The announcement record: one accepted announcement, from intake to its last event."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from qwen3tts.appliance.messages import PRIORITIES


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
    t_queued: float = 0.0
    t_started: float | None = None
    t_first_audio: float | None = None
    t_finished: float | None = None

    def rank(self) -> tuple[int, int]:
        """Sort key: most urgent first, then first come first served."""
        return (-PRIORITIES.index(self.priority), self.seq)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def to_json(self) -> dict[str, Any]:
        obj = asdict(self)
        obj["correlation_data"] = self.correlation_data.hex() if self.correlation_data is not None else None
        return obj

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Announcement:
        obj = dict(obj)
        if obj.get("correlation_data") is not None:
            obj["correlation_data"] = bytes.fromhex(obj["correlation_data"])
        ann = cls(**obj)
        if not isinstance(ann.id, str) or not isinstance(ann.text, str) or ann.priority not in PRIORITIES:
            raise ValueError("announcement has a bad id, text or priority")
        return ann
