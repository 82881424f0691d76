"""A pool member coming back: before it replays its spool, it drops what its rescuer took.

A member killed between its spool write and its acknowledgement reaching the broker has the message in
its spool, and the broker still has it in flight in the member's session: the anchor's rescue takes it
(flagged as redelivered) and speaks it. The rescuer lists those in the member's `rescued` record
(pool.py, `taken`: fingerprints as recent_ids.py makes them, with the owner's packet ids); the member,
back, reads its record once before the announcer replays the spool and drops the spooled pooled
announcements listed there, naming the rescuer in the log.

The record is read only then: the member's own record replaces it as soon as its pool link connects,
before it acknowledges anything, so a list never meets a spooled announcement of a later session. A
fingerprint is content and packet id: when two boxes admit the same message differently (other
defaults), it does not match and the message is spoken twice, as before, never lost.
"""

from __future__ import annotations

import logging

from qwen3tts.appliance.announcements.recent_ids import fingerprint
from qwen3tts.appliance.announcements.spool import Spool
from qwen3tts.appliance.mqtt.pool import RESCUED, MemberRecord, PoolTopics
from qwen3tts.appliance.mqtt.pool_link import POOL_PACKET_BASE
from qwen3tts.appliance.mqtt.probe import read_retained
from qwen3tts.errors import BrokerError
from qwen3tts.settings import MqttSettings

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 3.0


def own_record(settings: MqttSettings, topics: PoolTopics, site: str) -> MemberRecord | None:
    """This member's retained record, or None (none, not valid, or the broker out of reach: logged)."""
    try:
        found = read_retained(settings, [topics.member(site)], timeout=READ_TIMEOUT_S)
    except BrokerError as exc:
        log.warning("pool: cannot read our record before the replay (%s); the spool replays whole", exc)
        return None
    payloads = [payload for topic, payload in found if topic == topics.member(site)]
    return MemberRecord.parse(site, payloads[-1]) if payloads else None


def drop_rescued(spool: Spool, record: MemberRecord | None) -> list[str]:
    """Remove the spooled pooled announcements a `rescued` record lists; their ids. Runs before the
    announcer starts (the spool has no owner yet)."""
    if record is None or record.state != RESCUED or not record.taken:
        return []
    taken, dropped = set(record.taken), []
    for ann in spool.load():
        pooled = ann.message_id is not None and POOL_PACKET_BASE <= ann.message_id < 2 * POOL_PACKET_BASE
        if pooled and fingerprint(ann, ann.message_id) in taken:
            log.info("%s: taken over by %s when it rescued our pool session; not replayed", ann.id, record.by)
            spool.remove(ann)
            dropped.append(ann.id)
    return dropped
