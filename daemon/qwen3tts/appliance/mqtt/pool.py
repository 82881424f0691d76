"""The synthesis pool: boxes that share announcements through an MQTT 5 shared subscription.

Every member subscribes `$share/<group>/<pool_topic>/say` on a connection of its own (pool_link.py); the
broker hands each message to one member. What the broker does not do, measured on mosquitto 2.0.11
(scripts/measure_shared_subscriptions.py, docs/operations.md): its round robin does not see load or
liveness — a member that does not acknowledge keeps getting its share, a dead member with a persistent
session too, and nothing assigned to a member ever moves to another (with session expiry 0 it is
dropped). Receive Maximum holds only while a member acknowledges nothing. So the pool's rules are ours:

- **Hold** (`PoolGate`): a member takes (spools and acknowledges) a pooled announcement only while fewer
  than `pool_max_waiting` announcements wait in its queue and their estimated audio is under
  `pool_max_delay`; the rest stays unacknowledged, so it is still the broker's if the member dies.
- **Away**: a member whose waiting audio reaches `pool_max_delay` also leaves the round robin
  (unsubscribes) until it is below again — except the *anchor*, the online member with the lowest site
  name, which always stays: with no subscriber left mosquitto drops a pooled message.
- **Rescue**: every member publishes a retained record (`<pool_topic>/members/<group>/<site>`: its pool
  client id and state; its will says `offline`). When a record turns `offline`, the anchor takes over that
  member's session (same client id, clean start off), unsubscribes it from the round robin, speaks what
  was waiting there and ends the session; what the dead member had spooled it speaks itself on restart.
  The `rescued` record lists what the rescuer took that the broker flagged as redelivered (the member
  may have spooled it and died before its acknowledgement reached the broker): the member, back, drops
  those from its spool before it replays it (pool_return.py).

This module is the pure part: topics, records, the members' view and the gate. No paho here.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.lookahead import CHARS_PER_SECOND
from qwen3tts.appliance.mqtt.payload import quote
from qwen3tts.appliance.mqtt.topics import Topics

log = logging.getLogger(__name__)

MEMBER, AWAY, OFFLINE, RESCUED = "member", "away", "offline", "rescued"
"""A record's state: in the round robin; online but out of it; gone (its will); its session was rescued."""
STATES = (MEMBER, AWAY, OFFLINE, RESCUED)
RECORD_MAX_BYTES = 4096
TAKEN_MAX = 64
"""A `rescued` record lists at most this many taken messages (the newest): more than Receive Maximum (20),
the most a session has in flight, which are the only ones its owner can have spooled unacknowledged."""
FINGERPRINT_CHARS = 32
CLIENT_ID_MAX_CHARS = 128


@dataclass(frozen=True)
class PoolTopics:
    """Where a pool lives: `<base>/say` (shared by the group), `<base>/members/<group>/<site>` records."""

    group: str
    base: str

    @property
    def say(self) -> str:
        return f"{self.base}/say"

    @property
    def shared(self) -> str:
        """The shared subscription every member holds."""
        return f"$share/{self.group}/{self.say}"

    @property
    def members(self) -> str:
        """Filter of every member's record."""
        return f"{self.base}/members/{self.group}/+"

    def member(self, site: str) -> str:
        return f"{self.base}/members/{self.group}/{site}"

    def drain(self, site: str) -> str:
        """Where a rescue of `site`'s session sends itself the marker that follows what waited there."""
        return f"{self.base}/drain/{self.group}/{site}"

    def site_of(self, topic: str) -> str | None:
        """The site a record topic names, None for any other topic."""
        head = f"{self.base}/members/{self.group}/"
        site = topic[len(head) :] if topic.startswith(head) else ""
        return site if site and "/" not in site else None

    def intake_topics(self, own: Topics) -> Topics:
        """What the pool's intake parses with: a say on `<base>/say`, MQTT 5 replies under `<base>/reply`
        (or the box's `response_prefix`), nothing else."""
        return Topics(self.base, discovery_prefix=own.discovery_prefix, response_prefix=own.response_prefix)


@dataclass(frozen=True)
class MemberRecord:
    """One member as its retained record says: site, the client id of its pool session, state; a
    `rescued` one also who rescued it (`by`) and the fingerprints (recent_ids.py, with the owner's packet
    ids) of the redelivered messages the rescuer took (`taken`)."""

    site: str
    client_id: str
    state: str
    by: str | None = None
    taken: tuple[str, ...] = ()

    def payload(self) -> bytes:
        obj: dict[str, object] = {"site": self.site, "client_id": self.client_id, "state": self.state}
        if self.by is not None:
            obj["by"], obj["taken"] = self.by, list(self.taken[-TAKEN_MAX:])
        return json.dumps(obj).encode()

    @classmethod
    def parse(cls, site: str, payload: bytes) -> MemberRecord | None:
        """The record published for `site`, or None when it is empty (withdrawn) or not a valid record
        (logged: records come from the broker, anyone may write one)."""
        if not payload:
            return None
        problem = "too large" if len(payload) > RECORD_MAX_BYTES else None
        obj = None
        if problem is None:
            try:
                obj = json.loads(payload.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                problem = "not JSON"
        if problem is None and not isinstance(obj, dict):
            problem = "not a JSON object"
        if problem is None:
            problem = _record_problem(site, obj)
        if problem is not None:
            log.warning("pool: ignoring the record of %s: %s", quote(site, 80), problem)
            return None
        by, taken = obj.get("by"), obj.get("taken", [])
        return cls(site, obj["client_id"], obj["state"], by, tuple(taken))


def _record_problem(site: str, obj: dict) -> str | None:
    client_id, state = obj.get("client_id"), obj.get("state")
    if obj.get("site") != site:
        return "its site is not the one in its topic"
    if not isinstance(client_id, str) or not 0 < len(client_id) <= CLIENT_ID_MAX_CHARS:
        return f"client_id must be text of 1-{CLIENT_ID_MAX_CHARS} characters"
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in client_id):
        return "client_id has control characters or spaces"
    if state not in STATES:
        return f"state must be one of {', '.join(STATES)}"
    return _rescuer_problem(obj)


def _rescuer_problem(obj: dict) -> str | None:
    by, taken = obj.get("by"), obj.get("taken", [])
    if by is not None and not (isinstance(by, str) and 0 < len(by) <= CLIENT_ID_MAX_CHARS):
        return f"by must be a site name of 1-{CLIENT_ID_MAX_CHARS} characters"
    if not isinstance(taken, list) or len(taken) > TAKEN_MAX:
        return f"taken must be a list of at most {TAKEN_MAX} fingerprints"
    hexdigits = set("0123456789abcdef")
    if any(not isinstance(t, str) or len(t) != FINGERPRINT_CHARS or set(t) - hexdigits for t in taken):
        return f"taken must hold fingerprints of {FINGERPRINT_CHARS} hex digits"
    return None


class PoolMembers:
    """This member's view of the others, from their retained records; the anchor and who needs rescuing."""

    def __init__(self, site: str) -> None:
        self.site = site
        self._records: dict[str, MemberRecord] = {}
        self._lock = threading.Lock()

    def update(self, site: str, record: MemberRecord | None) -> None:
        with self._lock:
            if record is None:
                self._records.pop(site, None)
            else:
                self._records[site] = record

    def record(self, site: str) -> MemberRecord | None:
        with self._lock:
            return self._records.get(site)

    def online(self) -> list[str]:
        """Sites of the members online (this one always), sorted."""
        with self._lock:
            sites = {s for s, r in self._records.items() if r.state in (MEMBER, AWAY)}
        return sorted(sites | {self.site})

    def anchor(self) -> str:
        """The member that never leaves the round robin: the lowest online site name."""
        return self.online()[0]

    def offline(self) -> list[MemberRecord]:
        """Other members whose record says `offline`: their sessions may hold pooled announcements."""
        with self._lock:
            return [r for s, r in sorted(self._records.items()) if r.state == OFFLINE and s != self.site]


def estimated_audio_s(ann: Announcement) -> float:
    """Seconds of speech an announcement still owes (its text at a speaking rate, times the plays left)."""
    plays = max(1, ann.repeat - ann.plays_done)
    return plays * len(ann.text) / CHARS_PER_SECOND + (plays - 1) * ann.repeat_interval


class PoolGate:
    """Whether this member takes pooled announcements now, from its queue as the announcer last saw it.

    `update()` runs on the announcer's thread (the queue's owner) after every change; `wait_open()` on the
    pool intake's thread, before it takes the next pooled message.
    """

    def __init__(self, max_waiting: int, max_delay_s: float) -> None:
        self.max_waiting = max_waiting
        self.max_delay_s = max_delay_s
        self.waiting = 0
        self.ahead_s = 0.0
        self._cond = threading.Condition()

    def update(self, waiting: Iterable[Announcement]) -> bool:
        """Take the queue's waiting announcements; True when `behind` changed."""
        anns = list(waiting)
        ahead = sum(estimated_audio_s(a) for a in anns)
        with self._cond:
            was_behind = self.behind
            self.waiting, self.ahead_s = len(anns), ahead
            self._cond.notify_all()
            return self.behind != was_behind

    @property
    def holding(self) -> bool:
        """Too much waits: pooled messages stay unacknowledged at the broker."""
        return self.waiting >= self.max_waiting or self.behind

    @property
    def behind(self) -> bool:
        """So much audio waits that a new pooled announcement would start late: leave the round robin."""
        return self.ahead_s >= self.max_delay_s

    def wait_open(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self.holding, timeout)

    def state(self) -> str:
        return "behind" if self.behind else ("holding" if self.holding else "taking")
