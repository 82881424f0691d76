"""A rescuer notes what it took that its owner may have spooled (pool_member.py `RescueHandover`); the
member, back, drops from its spool what the rescuer took (pool_return.py), nothing else."""

from __future__ import annotations

from types import SimpleNamespace

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.recent_ids import RecentIds, fingerprint
from qwen3tts.appliance.announcements.spool import Spool
from qwen3tts.appliance.mqtt.pool import MEMBER, OFFLINE, RESCUED, MemberRecord
from qwen3tts.appliance.mqtt.pool_link import POOL_PACKET_BASE
from qwen3tts.appliance.mqtt.pool_member import RescueHandover
from qwen3tts.appliance.mqtt.pool_return import drop_rescued


def spooled(spool: Spool, seq: int, message_id: int | None, text: str = "Pooled notice.") -> Announcement:
    ann = Announcement(id=f"id-{seq}", text=text, seq=seq, message_id=message_id)
    spool.write(ann)
    return ann


def rescued_of(*anns: Announcement, owners_offset: int = 0) -> MemberRecord:
    """The record a rescuer writes: fingerprints with the owner's packet ids."""
    taken = tuple(fingerprint(a, a.message_id + owners_offset) for a in anns)
    return MemberRecord("b", "b-pool", RESCUED, by="a", taken=taken)


def test_only_the_pooled_announcements_the_rescuer_took_are_dropped(tmp_path):
    spool = Spool(tmp_path)
    took = spooled(spool, 1, POOL_PACKET_BASE + 7)
    kept = spooled(spool, 2, POOL_PACKET_BASE + 8)  # acknowledged in time: not in the rescue
    own = spooled(spool, 3, 7)  # the box's own topic, same packet id and text: not pooled
    same_text_other_packet = spooled(spool, 4, POOL_PACKET_BASE + 9)
    record = rescued_of(took, own)
    assert drop_rescued(spool, record) == [took.id]
    assert [a.id for a in spool.load()] == [kept.id, own.id, same_text_other_packet.id]


def test_a_record_that_is_not_a_rescue_drops_nothing(tmp_path):
    spool = Spool(tmp_path)
    ann = spooled(spool, 1, POOL_PACKET_BASE + 7)
    taken = rescued_of(ann).taken
    not_rescues = (
        None,
        MemberRecord("b", "b-pool", OFFLINE),
        MemberRecord("b", "b-pool", MEMBER, "a", taken),
    )
    for record in not_rescues:
        assert drop_rescued(spool, record) == []
    assert [a.id for a in spool.load()] == [ann.id]


def test_other_content_under_the_same_packet_id_is_kept(tmp_path):
    spool = Spool(tmp_path)
    ann = spooled(spool, 1, POOL_PACKET_BASE + 7, text="Platform three.")
    other = Announcement(id="x", text="Platform four.", seq=9, message_id=POOL_PACKET_BASE + 7)
    assert drop_rescued(spool, rescued_of(other)) == []
    assert [a.id for a in spool.load()] == [ann.id]


class FakeAnnouncer:
    """Records what was handed over, with its `ack`; `queue.recent` is the real duplicate memory."""

    def __init__(self) -> None:
        self.queue = SimpleNamespace(recent=RecentIds())
        self.handed: list[tuple[Announcement, object]] = []

    def enqueue(self, ann, redelivered=False, ack=None) -> None:
        self.handed.append((ann, ack))

    def acknowledge_last(self) -> None:
        """What the announcer does once the put is done (or refused): call the handed `ack`."""
        self.handed[-1][1]()


class FakeRescue:
    def __init__(self) -> None:
        self.taken: list[str] = []

    def took(self, print_: str) -> None:
        self.taken.append(print_)


def rescued_message() -> Announcement:
    return Announcement(id="r1", text="Pooled notice.", message_id=2 * POOL_PACKET_BASE + 7)


def test_the_rescuer_notes_a_redelivered_message_it_took_with_the_owners_packet_id_before_its_ack():
    announcer, rescue, acks = FakeAnnouncer(), FakeRescue(), []
    handover = RescueHandover(announcer)
    handover.rescue = rescue
    ann = rescued_message()
    handover.enqueue(ann, redelivered=True, ack=lambda: acks.append(7))
    announcer.queue.recent.add(ann.id, ann, message_id=ann.message_id)  # what the queue's put does
    announcer.acknowledge_last()
    owners = Announcement(id="b-own", text="Pooled notice.", message_id=POOL_PACKET_BASE + 7)
    assert rescue.taken == [fingerprint(owners, owners.message_id)] and acks == [7]


def test_a_refused_or_first_delivered_message_is_acknowledged_but_not_noted():
    announcer, rescue, acks = FakeAnnouncer(), FakeRescue(), []
    handover = RescueHandover(announcer)
    handover.rescue = rescue
    refused = rescued_message()  # e.g. the queue was full: the queue does not remember it
    handover.enqueue(refused, redelivered=True, ack=lambda: acks.append(7))
    announcer.acknowledge_last()
    first = rescued_message()  # not flagged DUP: the owner never had it
    handover.enqueue(first, redelivered=False, ack=lambda: acks.append(7))
    announcer.queue.recent.add(first.id, first, message_id=first.message_id)
    announcer.acknowledge_last()
    assert rescue.taken == [] and acks == [7, 7]
