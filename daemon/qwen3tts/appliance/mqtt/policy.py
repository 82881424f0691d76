"""What the intake accepts: limits from settings, voices, languages and instruct from the bundle.

`AnnouncementPolicy.admit()` turns a parsed `Say` into an `Announcement` or raises `RequestError`
naming the first problem. Decisions taken here rather than at synthesis, so a request the bundle
cannot serve is refused (or adjusted, with a warning) before it is queued:

- `voice` and `lang` are resolved by the voice catalog (voices/catalog.py), the one place every front
  door resolves them (`auto` is always accepted).
- SSML (`ssml: true`, or a text that starts with `<speak>`) is parsed here, so invalid markup, an
  unknown `<voice>` or an `<audio>` naming no configured chime is one `rejected` with the reason and
  position; unknown elements are ignored with a warning in the `queued` event.
- `instruct` on a bundle that has no instruct turn (Base, 0.6B CustomVoice) is ignored with a
  warning in the `queued` event, the way the official implementation ignores it for 0.6B
  CustomVoice, instead of failing at synthesis.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.mqtt.messages import CHIME_VALUES, Say
from qwen3tts.appliance.mqtt.payload import check_clean, quote
from qwen3tts.appliance.priority import Priority
from qwen3tts.errors import RequestError
from qwen3tts.steady_clock import STEADY, SteadyClock
from qwen3tts.synthesis import checked_speech  # the same checks, and reasons, as every door
from qwen3tts.voices.catalog import VoiceCatalog

if TYPE_CHECKING:
    from qwen3tts.settings import AnnouncementSettings

INSTRUCT_IGNORED = "instruct ignored: this bundle cannot follow style instructions"


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

    def check_size(self, payload: bytes) -> None:
        if len(payload) > self.max_payload_bytes:
            raise RequestError(f"payload too large ({len(payload)} bytes > {self.max_payload_bytes})")

    def admit(self, say: Say, now: float) -> Announcement:
        """The announcement for a valid request (`warnings` says what was ignored), else RequestError."""
        text, ssml_warnings = checked_speech(
            say.text, say.ssml, self.max_text_chars, self.catalog, self.chimes
        )
        self._check_numbers(say)
        if say.chime is not None and say.chime not in CHIME_VALUES:
            raise RequestError(f"unknown chime {quote(say.chime)}; expected one of {', '.join(CHIME_VALUES)}")
        voice = self.catalog.resolve(say.voice) if say.voice is not None else None
        lang = self.catalog.resolve_language(say.lang) if say.lang is not None else None
        instruct, warnings = self._instruct(say.instruct)
        warnings += ssml_warnings
        self._check_zones(say.zones)
        ann = Announcement(
            id=say.id or str(uuid.uuid4()),
            text=text,
            priority=say.priority,
            lang=lang,
            voice=voice,
            instruct=instruct,
            volume=say.volume,
            chime=say.chime,
            interrupt=say.interrupt if say.interrupt is not None else say.priority is not Priority.NORMAL,
            repeat=say.repeat,
            repeat_interval=say.repeat_interval,
            expires_at=self._expiry(say),
            response_topic=say.response_topic,
            correlation_data=say.correlation_data,
            session_id=say.session_id,
            normalize=say.normalize,
            ssml=say.ssml,
            seed=say.seed,
            cache=say.cache,
            zones=say.zones,
            t_queued=now,
            warnings=warnings,
        )
        return ann

    def _check_numbers(self, say: Say) -> None:
        if say.volume is not None and not 0.0 <= say.volume <= 1.0:
            raise RequestError(f"volume must be between 0 and 1, got {say.volume}")
        if not 1 <= say.repeat <= self.max_repeat:
            raise RequestError(f"repeat must be between 1 and {self.max_repeat}, got {say.repeat}")
        if not 0.0 <= say.repeat_interval <= self.max_repeat_interval:
            raise RequestError(f"repeat_interval must be 0..{self.max_repeat_interval:g} s")
        if say.ttl is not None and say.ttl <= 0:
            raise RequestError(f"ttl must be positive, got {say.ttl}")

    def _check_zones(self, zones: tuple[str, ...]) -> None:
        unknown = [zone for zone in zones if self.zones and zone not in self.zones]
        if unknown:
            names = ", ".join(quote(zone) for zone in unknown)
            raise RequestError(f"unknown zone {names}; this box has {', '.join(self.zones)}")

    def _instruct(self, instruct: str | None) -> tuple[str | None, tuple[str, ...]]:
        if instruct is None or not instruct.strip():
            return None, ()
        instruct = check_clean("instruct", instruct, allow_line_breaks=True).strip()
        if len(instruct) > self.max_text_chars:
            raise RequestError(f"instruct too long ({len(instruct)} characters > {self.max_text_chars})")
        if not self.supports_instruct:
            return None, (INSTRUCT_IGNORED,)
        return instruct, ()

    def _expiry(self, say: Say) -> float | None:
        """The earliest deadline on the steady time line: durations count from now on the monotonic clock,
        `expires_at` is read against the wall clock now; a later step of the wall clock moves neither."""
        now = self.timeline()
        deadlines = [self.timeline.from_wall(say.expires_at)] if say.expires_at is not None else []
        if say.ttl is not None:
            deadlines.append(now + say.ttl)
        elif say.expires_at is None and self.default_ttl > 0:
            deadlines.append(now + self.default_ttl)
        if say.message_expiry is not None:
            deadlines.append(now + say.message_expiry)
        return min(deadlines) if deadlines else None
