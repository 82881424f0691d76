"""The last event of a spooled announcement, kept on disk until the broker has it.

The announcer forgets a spooled announcement (its spool file goes) as it ends, and then says so. A
process killed between the two, or before the event left its socket (SIGKILL, the OOM killer, a power
cut), lost that event for good: the spool no longer held the announcement and nothing else remembered
that it ended, so its publisher never heard the end. So the messages of a terminal event (the event,
its MQTT 5 reply, Hermes' sayFinished) are built *before* the spool forgets the announcement and
appended, fsynced, to `owed-events.jsonl` in the spool directory; they go out as built, and a `paid`
line follows once the broker acknowledged each one. A start sends again, byte for byte, what is still
owed, and does not replay a spool file whose announcement this file says ended. A message the broker
acknowledged just before a crash is thus sent twice, identical (QoS 1 is at least once anyway), never
lost. When the disk refuses the write, the event goes out as before, owed nowhere (logged once).

The file is ours but read as hostile: a torn or malformed line is skipped with a log line.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from qwen3tts.appliance.mqtt.messages import Message, MqttMeta

log = logging.getLogger(__name__)

FILE_NAME = "owed-events.jsonl"
MAX_FILE_BYTES = 8 << 20
"""A larger file is not read (nothing the daemon writes grows so: paid entries are compacted away)."""
COMPACT_AFTER_LINES = 256


@dataclass(frozen=True)
class OwedMessage(Message):
    """One message of a terminal event, as it was published: its topic, bytes and properties."""

    full_topic: str
    raw: bytes
    retained: bool = False
    response_topic: str | None = None
    correlation_data: bytes | None = None

    @classmethod
    def of(cls, message: Message, base: str) -> OwedMessage:
        meta = message.meta()
        return cls(message.topic(base), message.payload(), meta.retain, meta.response_topic,
                   meta.correlation_data)  # fmt: skip

    def topic(self, base: str) -> str:
        return self.full_topic

    def payload(self) -> bytes:
        return self.raw

    def meta(self) -> MqttMeta:
        return MqttMeta(self.retained, self.response_topic, self.correlation_data)

    def to_json(self) -> dict:
        cd = self.correlation_data
        return {"topic": self.full_topic, "payload": base64.b64encode(self.raw).decode(),
                "retain": self.retained, "response_topic": self.response_topic,
                "correlation_data": base64.b64encode(cd).decode() if cd is not None else None}  # fmt: skip

    @classmethod
    def from_json(cls, obj: dict) -> OwedMessage:
        topic, payload, response = obj["topic"], obj["payload"], obj.get("response_topic")
        cd = obj.get("correlation_data")
        if not isinstance(topic, str) or not topic or not isinstance(payload, str):
            raise ValueError("a message needs a topic and a payload")
        if response is not None and not isinstance(response, str):
            raise ValueError("response_topic must be text")
        return cls(topic, base64.b64decode(payload, validate=True), obj.get("retain") is True, response,
                   base64.b64decode(cd, validate=True) if cd is not None else None)  # fmt: skip


def _acknowledged(info) -> bool:
    """Whether the broker acknowledged a message, from paho's message info (None: never sent). paho keeps
    a QoS 1 message published while it is not connected and sends it on connect, but its
    `is_published()` raises for one (rc "not connected"): its flag is what counts then."""
    if info is None:
        return False
    try:
        return info.is_published()
    except RuntimeError:  # published while disconnected: queued by paho all the same
        return bool(getattr(info, "_published", False))
    except ValueError:  # paho's queue was full: never sent; owed until the next start sends it
        return False


class OwedEvents:
    """Ann id -> the messages of its terminal event, until the broker acknowledged them all.

    `owe` runs on the announcer's thread before the spool forgets the announcement, `sent` and `settle`
    on the threads that publish and tick; a lock keeps the file and the table together.
    """

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / FILE_NAME
        self.owed: dict[str, list[OwedMessage]] = {}
        self._sent: dict[str, list] = {}
        self._lines = 0
        self._trouble: str | None = None
        self._lock = threading.Lock()
        self._load()

    def ids(self) -> set[str]:
        """Announcements that ended and whose end the broker may not have: not replayed."""
        with self._lock:
            return set(self.owed)

    def owe(self, ann_id: str, messages: list[Message], base: str) -> list[OwedMessage]:
        """Keep the messages of `ann_id`'s terminal event on disk (fsynced); the ones to publish."""
        owed = [OwedMessage.of(m, base) for m in messages]
        with self._lock:
            if self._append({"owe": ann_id, "messages": [m.to_json() for m in owed]}, sync=True):
                self.owed[ann_id] = owed
        return owed

    def sent(self, ann_id: str, infos: list) -> None:
        """What publishing `ann_id`'s messages returned (paho's message infos; None: not sent)."""
        with self._lock:
            if ann_id in self.owed:
                self._sent[ann_id] = infos

    def settle(self) -> None:
        """Mark paid what the broker acknowledged (the status thread, every second)."""
        with self._lock:
            for ann_id, infos in list(self._sent.items()):
                if all(_acknowledged(info) for info in infos):
                    del self._sent[ann_id]
                    self.owed.pop(ann_id, None)
                    self._append({"paid": ann_id}, sync=False)  # lost: sent once more, never lost
            if self._lines > COMPACT_AFTER_LINES + 2 * len(self.owed):
                self._compact()

    def resend(self, publish) -> int:
        """Publish again everything still owed (at start, once the MQTT door exists); how many ends."""
        with self._lock:
            owed = dict(self.owed)
        for ann_id, messages in owed.items():
            log.info("%s: its end was not acknowledged before the last stop; sending it again", ann_id)
            self.sent(ann_id, [publish(m) for m in messages])
        return len(owed)

    # ---- the file ----

    def _append(self, entry: dict, *, sync: bool) -> bool:
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=True) + "\n")
                if sync:
                    f.flush()
                    os.fsync(f.fileno())
        except OSError as exc:
            self._say_trouble(exc)
            return False
        self._lines += 1
        self._trouble = None
        return True

    def _compact(self) -> None:
        tmp = self.path.with_name(FILE_NAME + ".tmp")
        lines = [json.dumps({"owe": i, "messages": [m.to_json() for m in ms]}) for i, ms in self.owed.items()]
        try:
            tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            self._say_trouble(exc)
            return
        self._lines = len(lines)

    def _say_trouble(self, exc: OSError) -> None:
        trouble = exc.strerror or str(exc)
        if trouble != self._trouble:
            log.warning("cannot write %s: %s (an end said now is not sent again after a crash)",
                        self.path, trouble)  # fmt: skip
        self._trouble = trouble

    def _load(self) -> None:
        try:
            if self.path.stat().st_size > MAX_FILE_BYTES:
                log.error("%s is larger than %d bytes; not read", self.path, MAX_FILE_BYTES)
                return
            text = self.path.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return
        except OSError as exc:
            log.error("cannot read %s: %s", self.path, exc.strerror or exc)
            return
        for number, line in enumerate(text.splitlines(), 1):
            self._lines += 1
            try:
                self._read_line(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
                log.warning("%s line %d skipped: %s", self.path.name, number, type(exc).__name__)

    def _read_line(self, entry: dict) -> None:
        if isinstance(entry.get("paid"), str):
            self.owed.pop(entry["paid"], None)
            return
        ann_id, messages = entry["owe"], entry["messages"]
        if not isinstance(ann_id, str) or not isinstance(messages, list):
            raise ValueError("an entry needs an id and its messages")
        self.owed[ann_id] = [OwedMessage.from_json(m) for m in messages]
