"""What the MQTT door accepts, from the configuration: limits from settings, voices, languages and
instruct from the bundle, the zones and chimes of this box, and the time line deadlines are kept on.

The rules that use them are say_reader.py's (`admit`); `expiry` turns a say's ttl, expires_at and MQTT 5
message expiry into its deadline on the steady time line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qwen3tts.steady_clock import STEADY, SteadyClock
from qwen3tts.voices.catalog import VoiceCatalog

if TYPE_CHECKING:
    from qwen3tts.settings import AnnouncementSettings


@dataclass(frozen=True)
class AnnouncementPolicy:
    """What the intake accepts: limits from settings, voices and languages from the bundle."""

    max_payload_bytes: int = 65536
    max_text_chars: int = 2000
    max_repeat: int = 10
    max_repeat_interval: float = 3600.0
    default_ttl: float = 0.0
    catalog: VoiceCatalog = field(default_factory=VoiceCatalog)
    """Voices and languages of the loaded bundle (read live: SIGHUP reloads reach it); empty accepts any."""
    supports_instruct: bool = True
    """False for bundles without an instruct turn (Base, 0.6B CustomVoice): instruct is ignored."""
    zones: tuple[str, ...] = ()
    """The zones of this box: a say naming any other is refused naming it (empty: not checked)."""
    chimes: tuple[str, ...] | None = None
    """The chimes SSML `<audio src>` may name (None: any well-formed name)."""
    timeline: SteadyClock = STEADY
    """The time line of `Announcement.expires_at` (steady_clock.py): the announcer checks it on the same."""

    @classmethod
    def from_settings(
        cls,
        settings: AnnouncementSettings,
        *,
        max_text_chars: int,
        catalog: VoiceCatalog | None = None,
        supports_instruct: bool = True,
        zones: tuple[str, ...] = (),
        chimes: tuple[str, ...] | None = None,
    ) -> AnnouncementPolicy:
        return cls(
            max_payload_bytes=settings.max_payload_bytes,
            max_text_chars=max_text_chars,
            max_repeat=settings.max_repeat,
            default_ttl=settings.default_ttl,
            catalog=catalog or VoiceCatalog(),
            supports_instruct=supports_instruct,
            zones=zones,
            chimes=chimes,
        )

    def expiry(
        self, *, ttl: float | None, expires_at: float | None, message_expiry: int | None
    ) -> float | None:
        """A say's earliest deadline on the steady time line: durations (its ttl, else `default_ttl` when it
        names no `expires_at`; its MQTT 5 message expiry) count from now on the monotonic clock,
        `expires_at` (Unix time) is read against the wall clock now; a later step of the wall clock moves
        neither."""
        now = self.timeline()
        deadlines = [self.timeline.from_wall(expires_at)] if expires_at is not None else []
        if ttl is not None:
            deadlines.append(now + ttl)
        elif expires_at is None and self.default_ttl > 0:
            deadlines.append(now + self.default_ttl)
        if message_expiry is not None:
            deadlines.append(now + message_expiry)
        return min(deadlines) if deadlines else None
