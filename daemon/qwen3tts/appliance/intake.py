"""The front door: accepted announcements and the intake that admits them.

`AnnouncementIntake.handle()` is the whole front door, free of paho and threads: raw MQTT message
-> typed message -> validation (`AnnouncementPolicy`) -> duplicate check -> durable queue (spooled
and fsynced) -> MQTT ack -> `queued` event. Anything wrong becomes a `rejected` event naming the
reason; nothing raises out of `handle()`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from qwen3tts.appliance.announcement import Announcement
from qwen3tts.appliance.events import Event, Reply
from qwen3tts.appliance.hermes import HermesError, HermesSay, HermesSayFinished
from qwen3tts.appliance.messages import (
    PRIORITIES,
    HomeAssistantStatus,
    Inbound,
    Message,
    Say,
    Stop,
    Topics,
    parse_inbound,
)
from qwen3tts.errors import Qwen3TTSError, RequestError

if TYPE_CHECKING:
    from qwen3tts.appliance.queue import AnnouncementQueue
    from qwen3tts.settings import AnnouncementSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnnouncementPolicy:
    """What the intake accepts: limits from settings, voices and languages from the bundle."""

    max_payload_bytes: int = 65536
    max_text_chars: int = 2000
    max_repeat: int = 10
    max_repeat_interval: float = 3600.0
    default_ttl: float = 0.0
    voices: Collection[str] = ()
    """Known voice names; empty accepts any (no bundle loaded yet)."""
    languages: Collection[str] = ()
    """Known language names ('auto' is always accepted); empty accepts any."""

    @classmethod
    def from_settings(
        cls, settings: AnnouncementSettings, *, max_text_chars: int, voices=(), languages=()
    ) -> AnnouncementPolicy:
        return cls(
            max_payload_bytes=settings.max_payload_bytes,
            max_text_chars=max_text_chars,
            max_repeat=settings.max_repeat,
            default_ttl=settings.default_ttl,
            voices=tuple(voices),
            languages=tuple(languages),
        )

    def check_size(self, payload: bytes) -> None:
        if len(payload) > self.max_payload_bytes:
            raise RequestError(f"payload too large ({len(payload)} bytes > {self.max_payload_bytes})")

    def admit(self, say: Say, now: float) -> Announcement:
        """An Announcement for a valid request, else RequestError with the reason."""
        text = say.text.strip()
        if not text:
            raise RequestError("empty text")
        if len(text) > self.max_text_chars:
            raise RequestError(f"text too long ({len(text)} characters > {self.max_text_chars})")
        if say.priority not in PRIORITIES:
            raise RequestError(f"unknown priority {say.priority!r}; expected one of {', '.join(PRIORITIES)}")
        if say.volume is not None and not 0.0 <= say.volume <= 1.0:
            raise RequestError(f"volume must be between 0 and 1, got {say.volume}")
        if not 1 <= say.repeat <= self.max_repeat:
            raise RequestError(f"repeat must be between 1 and {self.max_repeat}, got {say.repeat}")
        if not 0.0 <= say.repeat_interval <= self.max_repeat_interval:
            raise RequestError(f"repeat_interval must be 0..{self.max_repeat_interval:g} s")
        if say.ttl is not None and say.ttl <= 0:
            raise RequestError(f"ttl must be positive, got {say.ttl}")
        self._check_known("voice", say.voice, self.voices)
        self._check_known("language", say.lang, self.languages, always=("auto",))
        return Announcement(
            id=say.id or str(uuid.uuid4()),
            text=text,
            priority=say.priority,
            lang=say.lang,
            voice=say.voice,
            instruct=say.instruct,
            volume=say.volume,
            chime=say.chime,
            interrupt=say.interrupt if say.interrupt is not None else say.priority != "normal",
            repeat=say.repeat,
            repeat_interval=say.repeat_interval,
            expires_at=self._expiry(say, now),
            response_topic=say.response_topic,
            correlation_data=say.correlation_data,
            session_id=say.session_id,
            t_queued=now,
        )

    def _expiry(self, say: Say, now: float) -> float | None:
        deadlines = [say.expires_at] if say.expires_at is not None else []
        if say.ttl is not None:
            deadlines.append(now + say.ttl)
        elif say.expires_at is None and self.default_ttl > 0:
            deadlines.append(now + self.default_ttl)
        if say.message_expiry is not None:
            deadlines.append(now + say.message_expiry)
        return min(deadlines) if deadlines else None

    @staticmethod
    def _check_known(kind: str, value: str | None, known: Collection[str], always=()) -> None:
        if value is None or not known:
            return
        allowed = {k.lower() for k in (*known, *always)}
        if value.lower() not in allowed:
            raise RequestError(f"unknown {kind} {value!r}; known: {', '.join(sorted(known))}")


class RecentIds:
    """The last `window` announcement ids, to drop QoS 1 redeliveries and repeated requests."""

    def __init__(self, window: int = 1000) -> None:
        self.window = window
        self._ids: OrderedDict[str, None] = OrderedDict()

    def seen(self, ann_id: str) -> bool:
        return ann_id in self._ids

    def add(self, ann_id: str) -> None:
        self._ids[ann_id] = None
        self._ids.move_to_end(ann_id)
        while len(self._ids) > self.window:
            self._ids.popitem(last=False)


@dataclass
class IntakeResult:
    """What one inbound message led to: messages to publish, commands for the player."""

    publish: list[Message] = field(default_factory=list)
    commands: list[Message] = field(default_factory=list)
    """Stop, SetVolume and SetVoice for the service to apply (waiting entries are already handled)."""
    accepted: Announcement | None = None


def announcement_events(
    ann: Announcement, event: str, reason: str = "", now: float | None = None
) -> list[Message]:
    """The `event` message for `ann`, plus its MQTT 5 reply and Hermes answer where they apply."""
    now = time.time() if now is None else now
    ev = Event(
        event=event,
        id=ann.id or None,
        reason=reason,
        t_event=now,
        t_queued=ann.t_queued or None,
        t_started=ann.t_started,
        t_first_audio=ann.t_first_audio,
        t_finished=ann.t_finished,
        correlation_data=ann.correlation_data,
    )
    out: list[Message] = [ev]
    if ann.response_topic:
        out.append(Reply(response_topic=ann.response_topic, event=ev))
    if ann.hermes_site_id is not None and event == "finished":
        out.append(HermesSayFinished(id=ann.id, site_id=ann.hermes_site_id, session_id=ann.session_id))
    if ann.hermes_site_id is not None and event in ("error", "rejected"):
        out.append(
            HermesError(error=reason, context=ann.id, site_id=ann.hermes_site_id, session_id=ann.session_id)
        )
    return out


class AnnouncementIntake:
    """Turns inbound MQTT messages into queued announcements, events and player commands."""

    def __init__(
        self,
        queue: AnnouncementQueue,
        policy: AnnouncementPolicy,
        topics: Topics,
        *,
        ack: Callable[[Any], object],
        hermes_site_id: str = "default",
        discovery: Callable[[], list[Message]] | None = None,
        dedup_window: int = 1000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.queue = queue
        self.policy = policy
        self.topics = topics
        self._ack = ack
        self.hermes_site_id = hermes_site_id
        self._discovery = discovery
        self.recent = RecentIds(dedup_window)
        self.clock = clock

    def replay(self) -> list[Message]:
        """Reload the spool after a start; returns `expired` events for what timed out meanwhile."""
        now = self.clock()
        replayed, expired = self.queue.replay(now)
        for ann in (*replayed, *expired):
            self.recent.add(ann.id)
        if replayed:
            log.info("replayed %d spooled announcements: %s", len(replayed), [a.id for a in replayed])
        out: list[Message] = []
        for ann in expired:
            out += announcement_events(ann, "expired", "expired while the appliance was down", now)
        return out

    def serve(
        self,
        inbound: queue.Queue[Inbound],
        publish: Callable[[Message], object],
        on_command: Callable[[Message], object],
        stop: threading.Event,
    ) -> None:
        """The intake thread's loop: handle each inbound message, publish and dispatch the results."""
        while not stop.is_set():
            try:
                item = inbound.get(timeout=0.2)
            except queue.Empty:
                continue
            result = self.handle(item)
            for message in result.publish:
                publish(message)
            for command in result.commands:
                on_command(command)

    def handle(self, inbound: Inbound) -> IntakeResult:
        """Process one inbound message completely, then acknowledge it; never raises.

        The ack goes out only after `_handle` returned, so an accepted announcement is already
        spooled and fsynced; rejected, duplicate and broken messages are acknowledged too, so the
        broker does not redeliver them forever.
        """
        try:
            return self._handle(inbound)
        except Exception as exc:  # the MQTT thread must keep serving whatever one message does
            log.exception("inbound message on %s failed", inbound.topic)
            return IntakeResult(
                publish=[Event("error", reason=f"{type(exc).__name__}: {exc}", t_event=self.clock())]
            )
        finally:
            self._ack(inbound.token)

    def _handle(self, inbound: Inbound) -> IntakeResult:
        now = self.clock()
        is_say = inbound.topic in (Say.topic_for(self.topics.base), HermesSay.TOPIC)
        if is_say and inbound.meta.retain:
            log.info("ignoring retained message on %s", inbound.topic)
            return IntakeResult()
        try:
            if is_say:
                self.policy.check_size(inbound.payload)
            message = parse_inbound(self.topics, inbound.topic, inbound.payload, inbound.meta)
        except Qwen3TTSError as exc:
            return self._rejected(None, str(exc), now, inbound)
        if isinstance(message, Say | HermesSay):
            return self._say(message, inbound, now)
        if isinstance(message, Stop):
            return self._stop(message, now)
        if isinstance(message, HomeAssistantStatus):
            online = message.online and self._discovery is not None
            return IntakeResult(publish=list(self._discovery()) if online else [])
        return IntakeResult(commands=[message])

    def _say(self, message: Say | HermesSay, inbound: Inbound, now: float) -> IntakeResult:
        if isinstance(message, HermesSay) and message.site_id != self.hermes_site_id:
            return IntakeResult()
        try:
            ann = self._admit(message, now)
        except RequestError as exc:
            return self._rejected(getattr(message, "id", None), str(exc), now, inbound, message)
        if self.recent.seen(ann.id):
            log.info("dropping duplicate announcement %s", ann.id)
            return IntakeResult()
        if ann.expired(now):
            self.recent.add(ann.id)
            return IntakeResult(
                publish=announcement_events(ann, "expired", "expired before it was queued", now)
            )
        try:
            self.queue.put(ann)  # spooled and fsynced when this returns
        except RequestError as exc:
            return self._rejected(ann.id, str(exc), now, inbound, message)
        except OSError as exc:
            log.error("cannot spool announcement %s: %s", ann.id, exc)
            return IntakeResult(publish=announcement_events(ann, "error", f"spool write failed: {exc}", now))
        self.recent.add(ann.id)
        return IntakeResult(publish=announcement_events(ann, "queued", "", now), accepted=ann)

    def _admit(self, message: Say | HermesSay, now: float) -> Announcement:
        if isinstance(message, Say):
            return self.policy.admit(message, now)
        say = Say(text=message.text, id=message.id, lang=message.lang, volume=message.volume)
        ann = self.policy.admit(say, now)
        ann.hermes_site_id, ann.session_id = message.site_id, message.session_id
        return ann

    def _stop(self, stop: Stop, now: float) -> IntakeResult:
        cancelled: list[Announcement] = []
        if stop.scope == "all":
            cancelled = self.queue.clear()
        elif stop.scope == "id" and stop.id is not None:
            found = self.queue.remove(stop.id)
            cancelled = [found] if found else []
        publish = [m for ann in cancelled for m in announcement_events(ann, "cancelled", "stop", now)]
        # The service cancels what is playing: always for current/all, for an id only if not waiting.
        commands: list[Message] = [] if stop.scope == "id" and cancelled else [stop]
        return IntakeResult(publish=publish, commands=commands)

    def _rejected(self, ann_id, reason: str, now: float, inbound: Inbound, message=None) -> IntakeResult:
        log.info("rejected message on %s: %s", inbound.topic, reason)
        ann = Announcement(id=ann_id or "", text="", t_queued=0.0)
        ann.response_topic = getattr(message, "response_topic", None) or inbound.meta.response_topic
        ann.correlation_data = inbound.meta.correlation_data
        if isinstance(message, HermesSay):
            ann.hermes_site_id, ann.session_id = message.site_id, message.session_id
        return IntakeResult(publish=announcement_events(ann, "rejected", reason, now))
