"""A box as a member of a synthesis pool: what it takes from the pool, when, and whose session it rescues.

Two workers beside the box's own intake, both handing pooled says to the same `Intake.handle` (the same
validation, policy and answers; the announcer spools and acknowledges each): the pooled worker takes
what the pool link receives, but only while the gate is open (pool.py: "Hold"); the rescue worker takes
what a rescue hands over at once, without the gate (it is the anchor's, and it must stay short: what is
not taken before the owner returns would be spoken twice), and notes in the rescue each redelivered one
before it is acknowledged (`RescueHandover`: the `rescued` record lists them, pool_return.py). A held
message received before the pool
connection last dropped is not taken (it may have been rescued meanwhile); the broker sends it again.
A message that waited is taken with what is left of its MQTT 5 Message Expiry Interval.

Threads: paho's (records, `post`), the two workers, the announcer's (`on_queue`), each rescue's own.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.announcements.recent_ids import fingerprint
from qwen3tts.appliance.announcements.spool import Spool
from qwen3tts.appliance.mqtt.intake import TICK_S, Announcer, Intake
from qwen3tts.appliance.mqtt.messages import Inbound
from qwen3tts.appliance.mqtt.pool import RESCUED, MemberRecord, PoolGate, PoolMembers, PoolTopics
from qwen3tts.appliance.mqtt.pool_link import POOL_PACKET_BASE, PoolLink
from qwen3tts.appliance.mqtt.pool_rescue import Rescue
from qwen3tts.appliance.mqtt.pool_return import drop_rescued, own_record
from qwen3tts.appliance.systemd.supervisor import Supervisor
from qwen3tts.settings import MqttSettings

log = logging.getLogger(__name__)


class Handover:
    """The announcer as the pool's intake sees it: notes that something was handed over, so the gate
    is read only after the announcer has queued it (`Announcer.applied`)."""

    def __init__(self, announcer) -> None:
        self.announcer = announcer
        self.handed = threading.Event()

    def enqueue(self, ann, redelivered: bool = False, ack=None) -> None:
        self.handed.set()
        self.announcer.enqueue(ann, redelivered, ack)

    def stop(self, scope, ann_id, answer) -> None:  # pool topics carry only says
        self.announcer.stop(scope, ann_id, answer)

    def set_volume(self, volume, answer=None) -> None:
        self.announcer.set_volume(volume, answer)

    def set_voice(self, voice, answer=None) -> None:
        self.announcer.set_voice(voice, answer)


class RescueHandover(Handover):
    """The rescue worker's: a redelivered announcement may also be in its owner's spool, so once it is
    taken here its fingerprint, with the owner's packet id, is noted in the rescue before it is
    acknowledged. Taken is what the queue now remembers (queued, or a duplicate of what it has); one
    refused (queue full, spool write failed) is acknowledged unnoted, and the owner keeps its copy.
    `rescue` is set by the rescue worker, this handover's only thread, before each message."""

    rescue: Rescue | None = None

    def enqueue(self, ann, redelivered: bool = False, ack=None) -> None:
        rescue = self.rescue
        if redelivered and rescue is not None and ack is not None and ann.message_id is not None:
            owners = ann.message_id - POOL_PACKET_BASE  # rescued ids are offset twice (pool_link.py)

            def noted_ack() -> None:  # the announcer's thread (the queue's owner), after the put
                if self.announcer.queue.recent.seen(ann.id):
                    rescue.took(fingerprint(ann, owners))
                ack()

            return super().enqueue(ann, redelivered, noted_ack)
        super().enqueue(ann, redelivered, ack)


class PoolMember:
    """The pool side of one box: its pool link, the gate, the members' view, the rescues."""

    def __init__(self, settings: MqttSettings, topics: PoolTopics, site: str, client_id: str, *,
                 announcer: Announcer, make_intake: Callable[[Announcer], Intake],
                 room: Callable[[float], bool] = lambda timeout: True,
                 heartbeat: Callable[[], None] = lambda: None):  # fmt: skip
        self.settings, self.topics, self.site = settings, topics, site
        self.gate = PoolGate(settings.pool_max_waiting, settings.pool_max_delay)
        self.members = PoolMembers(site)
        self._handover = Handover(announcer)
        self.intake = make_intake(self._handover)
        self._rescue_handover = RescueHandover(announcer)
        self._rescue_intake = make_intake(self._rescue_handover)
        self._room, self._beat = room, heartbeat
        self._pooled: queue.Queue[tuple[Inbound, int, float]] = queue.Queue()
        self._rescued: queue.Queue[tuple[Inbound, Rescue, float]] = queue.Queue()
        self._rescues: dict[str, Rescue] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.link = PoolLink(settings, topics, site, client_id=client_id, on_inbound=self._post,
                             on_record=self._on_record)  # fmt: skip

    # ---- lifecycle ----

    def start(self, supervisor: Supervisor) -> None:
        supervisor.start("pool", self._run_pooled)
        supervisor.start("pool-rescue", self._run_rescued)
        self.link.start()

    def drop_rescued(self, spool: Spool) -> list[str]:
        """Before the announcer replays `spool`: drop what a rescuer of our session took (pool_return.py)."""
        return drop_rescued(spool, own_record(self.settings, self.topics, self.site))

    def close(self) -> None:
        """Take nothing more (shutdown): what was not taken stays unacknowledged at the broker."""
        self._closed.set()

    def stop(self, *, offline: bool = True) -> None:
        self._closed.set()
        self.link.stop(offline=offline)

    def status(self) -> dict[str, object]:
        """The retained status' `pool` object."""
        return {"group": self.topics.group, "state": self.gate.state(), "round_robin": self.link.member,
                "anchor": self.members.anchor() == self.site}  # fmt: skip

    # ---- the announcer's thread ----

    def on_queue(self, announcements: AnnouncementQueue) -> None:
        """After every event: the queue as it is now (read on its owner's thread) sets the gate."""
        if self.gate.update(announcements.waiting()):
            self._review()

    # ---- the workers ----

    def _post(self, inbound: Inbound) -> None:
        """paho's thread: queue it with the connection's generation and the time it came."""
        self._pooled.put((inbound, self.link.generation, time.monotonic()))

    def _run_pooled(self, stop: threading.Event) -> None:
        while not (stop.is_set() or self._closed.is_set()):
            self._beat()
            if not self._gate_open(TICK_S):
                continue  # held: unacknowledged at the broker, still rescuable if we die
            try:
                inbound, generation, received = self._pooled.get(timeout=TICK_S)
            except queue.Empty:
                continue
            if generation != self.link.generation:
                log.info("pool: dropping a message from before the connection dropped; the broker resends it")
                continue
            self._take(inbound, received)

    def _gate_open(self, timeout: float) -> bool:
        if not self._room(timeout):
            return False
        if self._handover.handed.is_set():  # read the gate only once the announcer has queued it
            if not self._handover.announcer.applied(timeout):
                return False
            self._handover.handed.clear()
        return self.gate.wait_open(timeout)

    def _run_rescued(self, stop: threading.Event) -> None:
        while not (stop.is_set() or self._closed.is_set()):
            self._beat()
            if not self._room(TICK_S):
                continue
            try:
                inbound, rescue, received = self._rescued.get(timeout=TICK_S)
            except queue.Empty:
                continue
            if rescue.outcome is not None:
                log.info("pool: the rescue of %s ended (%s); its message stays in its session",
                         rescue.record.site, rescue.outcome)  # fmt: skip
                continue
            self._rescue_handover.rescue = rescue
            self._take(inbound, received, self._rescue_intake)

    def _take(self, inbound: Inbound, received: float, intake: Intake | None = None) -> None:
        if inbound.message_expiry is not None:
            left = inbound.message_expiry - int(time.monotonic() - received)  # held here: no wall-clock step
            inbound = replace(inbound, message_expiry=max(0, left))
        (intake or self.intake).handle(inbound)

    # ---- membership and rescues ----

    def _on_record(self, site: str, record: MemberRecord | None) -> None:
        if site != self.site:
            self.members.update(site, record)
        self._review()

    def _review(self) -> None:
        """Join or leave the round robin, and rescue the offline members if we are the anchor."""
        with self._lock:
            anchor = self.members.anchor() == self.site
            self.link.set_member(anchor or not self.gate.behind)
            if not anchor:
                return
            for record in self.members.offline():
                if record.client_id not in self._rescues:
                    self._rescue(record)

    def _rescue(self, record: MemberRecord) -> None:
        log.info("pool: %s is offline; taking over its pool session", record.site)
        rescue = Rescue(self.settings, self.topics, record, on_inbound=self._post_rescued,
                        on_end=self._rescue_ended, before=self.link.in_round_robin.wait)  # fmt: skip
        self._rescues[record.client_id] = rescue
        rescue.start()

    def _post_rescued(self, inbound: Inbound, rescue: Rescue) -> None:
        """A rescue's paho thread."""
        self._rescued.put((inbound, rescue, time.monotonic()))

    def _rescue_ended(self, record: MemberRecord, outcome: str, taken: tuple[str, ...]) -> None:
        with self._lock:
            self._rescues.pop(record.client_id, None)
        if outcome in ("rescued", "empty") and self.members.record(record.site) == record:
            self.link.publish_record(replace(record, state=RESCUED, by=self.site, taken=taken))
