"""The door: every inbound MQTT message becomes one request for the announcer, or one answer.

The intake thread (`run`) takes each message paho's thread queued (`post`), in arrival order, has it
validated (validate.py: every rule, in order, with the limits of `AnnouncementPolicy`) and hands the
`Announcement` to the announcer, or a stop / volume / voice command. The intake changes no queue and no
announcement: the announcer spools, deduplicates, acknowledges and answers (`queued`, `stopped`, ...).

The intake answers itself only what never reaches the announcer: anything invalid (retained commands
too) gets `rejected` with the caller's id when it can be read; Hermes requests for another siteId are
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
from qwen3tts.appliance.mqtt.hermes import HermesGetVoices, HermesPlayFinished
from qwen3tts.appliance.mqtt.hermes_sites import HermesSites
from qwen3tts.appliance.mqtt.messages import HomeAssistantStatus, Inbound, Message
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.appliance.mqtt.validate import Ignored, Rejection, validate
from qwen3tts.appliance.systemd.supervisor import isolated

log = logging.getLogger(__name__)

DISCOVERY_MIN_INTERVAL_S = 30.0
"""Home Assistant births closer together than this do not republish discovery (configs are retained)."""
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
        verdict = validate(inbound, self.topics, self.policy, self.hermes, now)
        if isinstance(verdict, Ignored):
            log.log(verdict.level, "%s", verdict.why)
            return False
        if isinstance(verdict, HomeAssistantStatus):
            self._home_assistant(verdict, now)
            return False
        if isinstance(verdict, HermesPlayFinished):
            self.hermes.satellite_played(verdict)
            return False
        caller = self._caller(inbound)
        if isinstance(verdict, Rejection):
            return self._rejected(verdict, now, caller)
        if isinstance(verdict, Announcement):
            return self._enqueue(verdict, inbound, caller)
        if isinstance(verdict, HermesGetVoices):
            self.hermes.voices(verdict, self.policy.catalog)
            return False
        answer = self._answerer(caller)
        if isinstance(verdict, Stop):
            self.announcer.stop(verdict.scope, verdict.id, answer)
        elif isinstance(verdict, SetVolume):
            self.announcer.set_volume(verdict.volume, answer)
        elif isinstance(verdict, SetVoice):
            self.announcer.set_voice(verdict.voice, answer)
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

    def _enqueue(self, ann: Announcement, inbound: Inbound, caller: Caller) -> bool:
        """An admitted say to the announcer, with where its answers go."""
        ann = replace(
            ann, response_topic=caller.response_topic, correlation_data=caller.correlation_data,
            warnings=ann.warnings + caller.warnings, message_id=inbound.message_id,
        )  # fmt: skip
        self.announcer.enqueue(ann, redelivered=inbound.dup, ack=inbound.ack)
        return True

    # ---- Home Assistant, refusals ----

    def _home_assistant(self, status: HomeAssistantStatus, now: float) -> None:
        if not (status.online and self._discovery is not None):
            return
        if self._last_discovery is not None and now - self._last_discovery < DISCOVERY_MIN_INTERVAL_S:
            log.info("Home Assistant online again within %.0f s; discovery not republished",
                     DISCOVERY_MIN_INTERVAL_S)  # fmt: skip
            return
        self._last_discovery = now
        for message in self._discovery():
            self.publish(message)

    def _rejected(self, rejection: Rejection, now: float, caller: Caller) -> bool:
        """`rejected` naming the caller's id; a Hermes say's also names its siteId and sessionId."""
        ann = Announcement(
            id=rejection.id or "", text="", response_topic=caller.response_topic,
            correlation_data=caller.correlation_data, hermes_site_id=rejection.hermes_site_id,
            session_id=rejection.session_id,
        )  # fmt: skip
        if rejection.hermes_site_id is not None and not ann.id:
            ann = replace(ann, id=str(uuid.uuid4()))  # sayFinished always names an id
        kind, reason = rejection.kind.__name__, rejection.reason
        log.info("rejected %s message%s: %s", kind, f" {ann.id}" if ann.id else "", reason)
        for out in announcement_events(ann, "rejected", reason, now, caller.warnings):
            self.publish(out)
        return False
