"""The door: every inbound MQTT message becomes one request for the announcer, or one answer.

The intake thread (`run`) takes each message paho's thread queued (`post`), in arrival order: size limit
of its topic -> typed message (bounded, validated) -> `AnnouncementPolicy` -> an `Announcement` handed to
the announcer, or a stop / volume / voice command handed to it. The intake changes no queue and no
announcement: the announcer spools, deduplicates, acknowledges and answers (`queued`, `stopped`, ...).

The intake answers itself only what never reaches the announcer: anything invalid gets `rejected` with the
caller's id when it can be read; retained commands are refused; Hermes requests for another siteId are
dropped (logged; hermes_sites.py says which sites are ours); Home Assistant's birth message gets the
discovery configs again (throttled). Each answer also goes to the request's MQTT 5 response topic when
`topics.refusal` allows it, with its correlation data.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.mqtt import topics as topic_rules
from qwen3tts.appliance.mqtt.answers import Caller, announcement_events, command_answer
from qwen3tts.appliance.mqtt.controls import SetVoice, SetVolume, Stop
from qwen3tts.appliance.mqtt.events import Event
from qwen3tts.appliance.mqtt.hermes import HermesGetVoices, HermesPlayFinished, HermesSay
from qwen3tts.appliance.mqtt.hermes_sites import HermesSites
from qwen3tts.appliance.mqtt.messages import (
    HomeAssistantStatus,
    Inbound,
    Message,
    Say,
)
from qwen3tts.appliance.mqtt.payload import salvage, salvage_id, salvage_name
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.routing import inbound_type, parse_inbound
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.appliance.systemd.supervisor import isolated
from qwen3tts.errors import RequestError

log = logging.getLogger(__name__)

DISCOVERY_MIN_INTERVAL_S = 30.0
"""Home Assistant births closer together than this do not republish discovery (configs are retained)."""
RETAINED_REASON = "retained commands are ignored; publish without the retain flag"
TICK_S = 0.2


class Announcer(Protocol):
    """What the intake hands over to (appliance/announcements/announcer.py)."""

    def enqueue(
        self, ann: Announcement, redelivered: bool = False, ack: Callable[[], object] | None = None
    ) -> None: ...
    def stop(self, scope: str, ann_id: str | None, answer: Callable[..., None]) -> None: ...
    def set_volume(self, volume: float, answer: Callable[..., None] | None = None) -> None: ...
    def set_voice(self, voice: str, answer: Callable[..., None] | None = None) -> None: ...


class Intake:
    """Turns inbound MQTT messages into announcements and commands for the announcer."""

    def __init__(
        self,
        announcer: Announcer,
        policy: AnnouncementPolicy,
        topics: Topics,
        publish: Callable[[Message], object],
        *,
        hermes_site_id: str = "default",
        hermes_chime: bool = False,
        play_finished: Callable[[str, str], bool] | None = None,
        discovery: Callable[[], list[Message]] | None = None,
        heartbeat: Callable[[], None] = lambda: None,
        room: Callable[[float], bool] = lambda timeout: True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.announcer = announcer
        self.policy = policy
        self.topics = topics
        self.publish = publish
        self.hermes = HermesSites(
            hermes_site_id, topics, publish, chime=hermes_chime, play_finished=play_finished
        )
        self._discovery = discovery
        self._last_discovery: float | None = None
        self._beat = heartbeat
        self._room = room
        """Blocks up to a timeout while the answers waiting for the broker are too many (backlog.py)."""
        self.clock = clock
        self._inbound: queue.Queue[Inbound] = queue.Queue()
        self._closed = threading.Event()

    def post(self, inbound: Inbound) -> None:
        """paho's network thread: queue the message, nothing else (never blocks, never raises)."""
        self._inbound.put(inbound)

    def close(self) -> None:
        """Stop handling messages (shutdown, reconnect): what is still queued is never acknowledged, so
        the broker delivers it again."""
        self._closed.set()

    def run(self, stop: threading.Event) -> None:
        """The intake thread's loop until `stop` or `close()`: each message handled completely, in order."""
        while not (stop.is_set() or self._closed.is_set()):
            self._beat()
            if not self._room(TICK_S):
                continue  # what we do not take stays unacknowledged at the broker: back-pressure
            try:
                inbound = self._inbound.get(timeout=TICK_S)
            except queue.Empty:
                continue
            self.handle(inbound)

    def handle(self, inbound: Inbound) -> None:
        """One message: handed over to the announcer (which acknowledges a say once spooled), or answered
        and acknowledged here. An unexpected failure answers `error` and acknowledges, so the broker does
        not redeliver a message that fails forever."""

        def failed(exc: BaseException) -> None:
            self._ack(inbound)
            reason = f"{type(exc).__name__}: {str(exc)[:200]}"
            self.publish(Event("error", reason=reason, t_event=self.clock()))

        with isolated(f"message on {inbound.topic[:80]!r}", failed):
            if not self._handle(inbound):
                self._ack(inbound)

    def _handle(self, inbound: Inbound) -> bool:
        """True when the announcer took the message over (and acknowledges it itself)."""
        now = self.clock()
        kind = inbound_type(self.topics, inbound.topic)
        if kind is None:
            log.warning("ignoring a message on a topic we do not serve")
            return False
        if kind is HomeAssistantStatus:
            self._home_assistant(inbound, now)
            return False
        if kind is HermesPlayFinished:
            self.hermes.satellite_played(inbound)
            return False
        caller = self._caller(inbound)
        if inbound.retain:
            return self._rejected(RETAINED_REASON, now, caller, inbound, kind)
        try:
            message = parse_inbound(self.topics, inbound, say_max_bytes=self.policy.max_payload_bytes)
        except RequestError as exc:
            return self._rejected(str(exc), now, caller, inbound, kind)
        if isinstance(message, Say | HermesSay):
            return self._say(message, inbound, caller, now)
        if isinstance(message, HermesGetVoices):
            self.hermes.voices(message, self.policy.catalog)
            return False
        answer = self._answerer(caller)
        if isinstance(message, Stop):
            self.announcer.stop(message.scope, message.id, answer)
        elif isinstance(message, SetVolume):
            self.announcer.set_volume(message.volume, answer)
        elif isinstance(message, SetVoice):
            try:
                voice = self.policy.catalog.resolve(message.voice)
            except RequestError as exc:
                return self._rejected(str(exc), now, caller, inbound, SetVoice)
            self.announcer.set_voice(voice, answer)
        return False

    def _answerer(self, caller: Caller) -> Callable[..., None]:
        """The answer callback of a command: the announcer calls it once the command took effect."""

        def answer(event: str, **fields) -> None:
            for message in command_answer(caller, self.clock(), event, **fields):
                self.publish(message)

        return answer

    def _caller(self, inbound: Inbound) -> Caller:
        topic, correlation = inbound.response_topic, inbound.correlation_data
        if topic is None:
            return Caller(correlation_data=correlation)
        refusal = topic_rules.refusal(self.topics, topic)
        if refusal:
            log.info("%s", refusal)
            return Caller(correlation_data=correlation, warnings=(refusal,))
        return Caller(topic, correlation)

    @staticmethod
    def _ack(inbound: Inbound) -> None:
        if inbound.ack is not None:
            inbound.ack()

    # ---- say ----

    def _say(self, message: Say | HermesSay, inbound: Inbound, caller: Caller, now: float) -> bool:
        if isinstance(message, HermesSay) and not self.hermes.speaks_for(message.site_id):
            log.info("ignoring a Hermes say for another siteId")
            return False
        try:
            ann = self._admit(message, inbound, now)
        except RequestError as exc:
            return self._rejected(str(exc), now, caller, inbound, type(message), message)
        ann = replace(
            ann, response_topic=caller.response_topic, correlation_data=caller.correlation_data,
            warnings=ann.warnings + caller.warnings, message_id=inbound.message_id,
        )  # fmt: skip
        self.announcer.enqueue(ann, redelivered=inbound.dup, ack=inbound.ack)
        return True

    def _admit(self, message: Say | HermesSay, inbound: Inbound, now: float) -> Announcement:
        if isinstance(message, Say):
            return self.policy.admit(message, now)
        say = self.hermes.as_say(message, inbound, self.policy.zones)
        return replace(self.policy.admit(say, now), hermes_site_id=message.site_id,
                       session_id=message.session_id)  # fmt: skip

    # ---- Home Assistant, refusals ----

    def _home_assistant(self, inbound: Inbound, now: float) -> None:
        try:
            status = parse_inbound(self.topics, inbound)
        except RequestError:
            return  # not a birth message: nothing to answer
        if not (isinstance(status, HomeAssistantStatus) and status.online and self._discovery is not None):
            return
        if self._last_discovery is not None and now - self._last_discovery < DISCOVERY_MIN_INTERVAL_S:
            log.info("Home Assistant online again within %.0f s; discovery not republished",
                     DISCOVERY_MIN_INTERVAL_S)  # fmt: skip
            return
        self._last_discovery = now
        for message in self._discovery():
            self.publish(message)

    def _rejected(
        self,
        reason: str,
        now: float,
        caller: Caller,
        inbound: Inbound,
        kind: type[Message],
        message: Message | None = None,
    ) -> bool:
        ann = Announcement(
            id=getattr(message, "id", None) or salvage_id(inbound.payload) or "", text="",
            response_topic=caller.response_topic, correlation_data=caller.correlation_data,
        )  # fmt: skip
        if kind is HermesSay:
            raw = salvage(inbound.payload)
            site = getattr(message, "site_id", None) or salvage_name(raw, "siteId") or "default"
            if not self.hermes.speaks_for(site):
                log.info("ignoring an invalid Hermes say for another siteId")
                return False
            session = getattr(message, "session_id", None) or salvage_name(raw, "sessionId")
            ann = replace(ann, hermes_site_id=site, session_id=session,
                          id=ann.id or str(uuid.uuid4()))  # sayFinished always names an id  # fmt: skip
        log.info("rejected %s message%s: %s", kind.__name__, f" {ann.id}" if ann.id else "", reason)
        for out in announcement_events(ann, "rejected", reason, now, caller.warnings):
            self.publish(out)
        return False
