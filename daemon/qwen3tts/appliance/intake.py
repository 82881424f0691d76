"""The front door: every inbound MQTT message becomes exactly one answer, never a traceback.

`AnnouncementIntake.handle()` is free of paho and threads: raw MQTT message -> size limit of its
topic -> typed message (bounded, validated) -> `AnnouncementPolicy` -> duplicate check (ids and,
for broker redeliveries, content) -> durable queue (spooled and fsynced) -> MQTT ack -> event.

Answers on `<base>/event`: a say gets `queued`, `expired` or `rejected`; a stop gets `stopped`
(plus `cancelled` for each waiting announcement it removed) or `not_found`; volume/set and
voice/set get `volume_set` / `voice_set`; anything invalid gets `rejected` with the caller's id
when it can be read. Retained commands are refused. Duplicates and Hermes requests for another
siteId are dropped without an event (logged). Each answer is also sent to the request's MQTT 5
response topic when `reply_topics.refusal` allows it, with the correlation data.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from qwen3tts.appliance import reply_topics
from qwen3tts.appliance.announcement import Announcement
from qwen3tts.appliance.answers import Caller, IntakeResult, announcement_events, answer
from qwen3tts.appliance.events import Event
from qwen3tts.appliance.hermes import HermesSay
from qwen3tts.appliance.messages import (
    HomeAssistantStatus,
    Inbound,
    Message,
    Say,
    SetVoice,
    SetVolume,
    Stop,
    Topics,
    inbound_type,
    parse_inbound,
)
from qwen3tts.appliance.payload import salvage, salvage_id, salvage_name
from qwen3tts.appliance.policy import AnnouncementPolicy
from qwen3tts.appliance.recent_ids import FILE_NAME, RecentIds
from qwen3tts.errors import RequestError

if TYPE_CHECKING:
    from qwen3tts.appliance.queue import AnnouncementQueue

__all__ = ["AnnouncementIntake", "AnnouncementPolicy", "IntakeResult", "RecentIds", "announcement_events"]

log = logging.getLogger(__name__)

DISCOVERY_MIN_INTERVAL_S = 30.0
"""Home Assistant births closer together than this do not republish discovery (configs are retained)."""
RETAINED_REASON = "retained commands are ignored; publish without the retain flag"


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
        hermes_chime: bool = False,
        discovery: Callable[[], list[Message]] | None = None,
        active_ids: Callable[[], Collection[str]] | None = None,
        dedup_window: int = 1000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.queue = queue
        self.policy = policy
        self.topics = topics
        self._ack = ack
        self.hermes_site_id = hermes_site_id
        self.hermes_chime = hermes_chime
        """Play the announcement chime before Hermes dialogue replies (default off)."""
        self._discovery = discovery
        self._active_ids = active_ids
        """Ids being spoken now; without it a stop for a recently accepted id is passed on."""
        self._last_discovery: float | None = None
        self.recent = RecentIds(dedup_window, queue.spool.directory / FILE_NAME)
        self.clock = clock

    def replay(self) -> list[Message]:
        """Reload the spool after a start; returns `expired` events for what timed out meanwhile."""
        now = self.clock()
        replayed, expired = self.queue.replay(now)
        for ann in (*replayed, *expired):
            self.recent.add(ann.id, ann, persist=False)  # the spool itself remembers them
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
        except Exception as exc:  # a bug: the intake thread must keep serving whatever one message does
            log.exception("inbound message on %s failed", inbound.topic)
            return IntakeResult(
                publish=[
                    Event("error", reason=f"{type(exc).__name__}: {str(exc)[:200]}", t_event=self.clock())
                ]
            )
        finally:
            self._ack(inbound.token)

    def _handle(self, inbound: Inbound) -> IntakeResult:
        now = self.clock()
        kind = inbound_type(self.topics, inbound.topic)
        if kind is None:
            log.warning("ignoring a message on a topic we do not serve")
            return IntakeResult()
        if kind is HomeAssistantStatus:
            return self._home_assistant(inbound, now)
        caller = self._caller(inbound)
        if inbound.meta.retain:
            return self._rejected(RETAINED_REASON, now, caller, inbound, kind)
        try:
            message = parse_inbound(
                self.topics, inbound.topic, inbound.payload, inbound.meta,
                say_max_bytes=self.policy.max_payload_bytes,
            )  # fmt: skip
        except RequestError as exc:
            return self._rejected(str(exc), now, caller, inbound, kind)
        if isinstance(message, Say | HermesSay):
            return self._say(message, inbound, caller, now)
        if isinstance(message, Stop):
            return self._stop(message, caller, now)
        if isinstance(message, SetVolume):
            return answer(Event("volume_set", volume=message.volume), caller, now, message)
        if isinstance(message, SetVoice):
            return self._set_voice(message, caller, now, inbound)
        raise AssertionError(f"no handler for {type(message).__name__}")  # inbound_type and here disagree

    def _caller(self, inbound: Inbound) -> Caller:
        topic, correlation = inbound.meta.response_topic, inbound.meta.correlation_data
        if topic is None:
            return Caller(correlation_data=correlation)
        refusal = reply_topics.refusal(self.topics, topic)
        if refusal:
            log.info("%s", refusal)
            return Caller(correlation_data=correlation, warnings=(refusal,))
        return Caller(topic, correlation)

    # ---- say ----

    def _say(self, message: Say | HermesSay, inbound: Inbound, caller: Caller, now: float) -> IntakeResult:
        if isinstance(message, HermesSay) and message.site_id != self.hermes_site_id:
            log.info("ignoring a Hermes say for another siteId")
            return IntakeResult()
        try:
            admitted = self._admit(message, now)
        except RequestError as exc:
            return self._rejected(str(exc), now, caller, inbound, type(message), message)
        ann, warnings = admitted.announcement, admitted.warnings + caller.warnings
        ann.response_topic, ann.correlation_data = caller.response_topic, caller.correlation_data
        if self.recent.seen(ann.id):
            log.info("dropping duplicate announcement %s", ann.id)
            return IntakeResult()
        earlier = self.recent.redelivered(ann) if inbound.meta.dup else None
        if earlier is not None:
            log.info("dropping a redelivery of announcement %s", earlier)
            return IntakeResult()
        if ann.expired(now):
            self.recent.add(ann.id, ann)
            return IntakeResult(
                publish=announcement_events(ann, "expired", "expired before it was queued", now)
            )
        try:
            self.queue.put(ann)  # spooled and fsynced when this returns
        except RequestError as exc:
            return self._rejected(str(exc), now, caller, inbound, type(message), message, ann.id)
        except OSError as exc:
            log.error("cannot spool announcement %s: %s", ann.id, exc.strerror)
            return IntakeResult(
                publish=announcement_events(ann, "error", f"spool write failed: {exc.strerror}", now)
            )
        self.recent.add(ann.id, ann)
        log.info("%s: queued (%s, %d characters)", ann.id, ann.priority, len(ann.text))
        return IntakeResult(publish=announcement_events(ann, "queued", "", now, warnings), accepted=ann)

    def _admit(self, message: Say | HermesSay, now: float):
        if isinstance(message, Say):
            return self.policy.admit(message, now)
        say = Say(
            text=message.text,
            id=message.id,
            lang=message.lang,
            volume=message.volume,
            chime=None if self.hermes_chime else "none",
        )
        admitted = self.policy.admit(say, now)
        admitted.announcement.hermes_site_id = message.site_id
        admitted.announcement.session_id = message.session_id
        return admitted

    # ---- commands ----

    def _stop(self, stop: Stop, caller: Caller, now: float) -> IntakeResult:
        if stop.scope == "id" and stop.id is not None:
            return self._stop_id(stop, stop.id, caller, now)
        cancelled = self.queue.clear() if stop.scope == "all" else []
        publish = [m for ann in cancelled for m in announcement_events(ann, "cancelled", "stop", now)]
        stopped = Event("stopped", scope=stop.scope, cancelled=tuple(a.id for a in cancelled))
        result = answer(stopped, caller, now, stop)
        result.publish[:0] = publish
        return result

    def _stop_id(self, stop: Stop, ann_id: str, caller: Caller, now: float) -> IntakeResult:
        found = self.queue.remove(ann_id)
        if found is not None:
            stopped = Event("stopped", id=ann_id, scope="id", cancelled=(ann_id,))
            result = answer(stopped, caller, now)
            result.publish[:0] = announcement_events(found, "cancelled", "stop", now)
            return result
        active = self._active_ids() if self._active_ids is not None else None
        if (active is not None and ann_id in active) or (active is None and self.recent.seen(ann_id)):
            return answer(Event("stopped", id=ann_id, scope="id"), caller, now, stop)
        log.info("stop: no announcement %s is waiting or playing", ann_id)
        reason = "no announcement with this id is waiting or playing"
        return answer(Event("not_found", id=ann_id, scope="id", reason=reason), caller, now)

    def _set_voice(self, message: SetVoice, caller: Caller, now: float, inbound: Inbound) -> IntakeResult:
        try:
            voice = self.policy.canonical_voice(message.voice)
        except RequestError as exc:
            return self._rejected(str(exc), now, caller, inbound, SetVoice)
        return answer(Event("voice_set", voice=voice), caller, now, SetVoice(voice))

    # ---- Home Assistant, refusals ----

    def _home_assistant(self, inbound: Inbound, now: float) -> IntakeResult:
        try:
            status = parse_inbound(self.topics, inbound.topic, inbound.payload, inbound.meta)
        except RequestError:
            return IntakeResult()  # not a birth message: nothing to answer
        if not (isinstance(status, HomeAssistantStatus) and status.online and self._discovery is not None):
            return IntakeResult()
        if self._last_discovery is not None and now - self._last_discovery < DISCOVERY_MIN_INTERVAL_S:
            log.info(
                "Home Assistant online again within %.0f s; discovery not republished",
                DISCOVERY_MIN_INTERVAL_S,
            )
            return IntakeResult()
        self._last_discovery = now
        return IntakeResult(publish=list(self._discovery()))

    def _rejected(
        self,
        reason: str,
        now: float,
        caller: Caller,
        inbound: Inbound,
        kind: type[Message],
        message: Message | None = None,
        ann_id: str | None = None,
    ) -> IntakeResult:
        ann = Announcement(
            id=ann_id or getattr(message, "id", None) or salvage_id(inbound.payload) or "", text=""
        )
        ann.response_topic, ann.correlation_data = caller.response_topic, caller.correlation_data
        if kind is HermesSay:
            raw = salvage(inbound.payload)
            site = getattr(message, "site_id", None) or salvage_name(raw, "siteId") or "default"
            if site != self.hermes_site_id:
                log.info("ignoring an invalid Hermes say for another siteId")
                return IntakeResult()
            ann.hermes_site_id = site
            ann.session_id = getattr(message, "session_id", None) or salvage_name(raw, "sessionId")
            ann.id = ann.id or str(uuid.uuid4())  # sayFinished always names an id
        log.info("rejected %s message%s: %s", kind.__name__, f" {ann.id}" if ann.id else "", reason)
        return IntakeResult(publish=announcement_events(ann, "rejected", reason, now, caller.warnings))
