"""Typed MQTT messages: every payload the appliance reads or writes, with its topic.

Each message class knows its topic (relative to the appliance's base topic, `qwen3tts/<site>`),
encodes its payload to bytes and decodes itself back with `from_mqtt(topic, payload, meta)`.
Nothing here imports paho: `MqttMeta` carries the few MQTT 5 properties we use, and
`appliance/mqtt.py` translates them. Parsing problems raise `RequestError` with a reason that
the intake turns into a `rejected` event.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from qwen3tts.errors import RequestError

PRIORITIES = ("normal", "priority", "emergency")
"""Announcement priority levels, lowest first (PA paging: normal, priority, emergency)."""

EVENTS = ("queued", "started", "first_audio", "finished", "cancelled", "expired", "rejected", "error")
STOP_SCOPES = ("current", "all", "id")


@dataclass(frozen=True)
class MqttMeta:
    """The MQTT facts of one message besides topic and payload (MQTT 5 properties are optional)."""

    retain: bool = False
    response_topic: str | None = None
    correlation_data: bytes | None = None
    message_expiry: int | None = None
    """MQTT 5 Message Expiry Interval in seconds (the remaining interval on received messages)."""


@dataclass(frozen=True)
class Inbound:
    """A message as it arrived, before parsing; `token` acknowledges it (`MqttClient.ack`)."""

    topic: str
    payload: bytes
    meta: MqttMeta = MqttMeta()
    token: object = None
    """Opaque QoS 1 acknowledgement handle; None when nothing needs acknowledging."""


@dataclass(frozen=True)
class Topics:
    """Where this appliance's topics live: `<prefix>/<site>/...` plus the optional bridges."""

    base: str
    discovery_prefix: str = "homeassistant"
    hermes: bool = False

    @property
    def ha_status(self) -> str:
        return f"{self.discovery_prefix}/status"

    def subscriptions(self) -> list[tuple[str, bool]]:
        """(topic filter, drop retained messages at subscribe) for every topic the appliance reads."""
        subs = [
            (Say.topic_for(self.base), True),
            (Stop.topic_for(self.base), True),
            (SetVolume.topic_for(self.base), True),
            (SetVoice.topic_for(self.base), True),
            (self.ha_status, False),
        ]
        if self.hermes:
            from qwen3tts.appliance.hermes import HermesSay

            subs.append((HermesSay.TOPIC, True))
        return subs


class Message:
    """Base of every typed MQTT message."""

    SUFFIX: ClassVar[str] = ""
    """Topic below the base topic; absolute topics override `topic()` instead."""
    retain: ClassVar[bool] = False
    qos: ClassVar[int] = 1

    @classmethod
    def topic_for(cls, base: str) -> str:
        return f"{base}/{cls.SUFFIX}"

    def topic(self, base: str) -> str:
        return self.topic_for(base)

    def payload(self) -> bytes:
        raise NotImplementedError

    def meta(self) -> MqttMeta:
        """The MQTT properties to publish with (correlation data, expiry)."""
        return MqttMeta(retain=self.retain)

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> Message:
        raise NotImplementedError


# --- helpers for decoding -----------------------------------------------------------------------


def decode_text(payload: bytes) -> str:
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(f"payload is not valid UTF-8 (byte {exc.start})") from None


def decode_json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RequestError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(value, dict):
        raise RequestError(f"JSON payload must be an object, got {type(value).__name__}")
    return value


def field_of(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    """obj[key] if it has the expected type (bool is never a number), else a RequestError."""
    value = obj.get(key)
    if value is None:
        return default
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise RequestError(f"field {key!r} must be {_kind_name(kinds)}, got bool")
    if not isinstance(value, kinds):
        raise RequestError(f"field {key!r} must be {_kind_name(kinds)}, got {type(value).__name__}")
    return value


def _kind_name(kinds: tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "a boolean", dict: "an object"}
    if float in kinds:
        kinds = tuple(k for k in kinds if k is not int)  # an int is a number too
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def encode_json(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _number(obj: dict[str, Any], key: str) -> float | None:
    value = field_of(obj, key, (int, float))
    return None if value is None else float(value)


# --- commands in ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Say(Message):
    """An announcement request on `<base>/say`: plain UTF-8 text or a JSON object."""

    SUFFIX: ClassVar[str] = "say"

    text: str
    id: str | None = None
    lang: str | None = None
    voice: str | None = None
    instruct: str | None = None
    priority: str = "normal"
    volume: float | None = None
    chime: str | None = None
    repeat: int = 1
    repeat_interval: float = 0.0
    ttl: float | None = None
    expires_at: float | None = None
    """Absolute expiry, Unix time in seconds."""
    interrupt: bool | None = None
    session_id: str | None = None
    plain: bool = False
    """The request came as plain text, not JSON (kept so the payload round-trips)."""
    response_topic: str | None = None
    correlation_data: bytes | None = None
    message_expiry: int | None = None

    def payload(self) -> bytes:
        if self.plain:
            return self.text.encode("utf-8")
        body = {k: v for k, v in asdict(self).items() if k in _SAY_JSON_FIELDS and v is not None}
        if body.get("priority") == "normal":
            del body["priority"]
        if body.get("repeat") == 1:
            del body["repeat"]
        if body.get("repeat_interval") == 0.0:
            del body["repeat_interval"]
        if "session_id" in body:
            body["sessionId"] = body.pop("session_id")
        return encode_json(body)

    def meta(self) -> MqttMeta:
        return MqttMeta(False, self.response_topic, self.correlation_data, self.message_expiry)

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> Say:
        meta = meta or MqttMeta()
        extra = {
            "response_topic": meta.response_topic,
            "correlation_data": meta.correlation_data,
            "message_expiry": meta.message_expiry,
        }
        text = decode_text(payload)
        if not text.lstrip().startswith("{"):
            return cls(text=text.strip(), plain=True, **extra)
        return cls.from_json(decode_json_object(text), **extra)

    @classmethod
    def from_json(cls, obj: dict[str, Any], **extra: Any) -> Say:
        if "text" not in obj:
            raise RequestError("missing field 'text'")
        repeat = field_of(obj, "repeat", int, 1)
        interrupt = field_of(obj, "interrupt", bool)
        return cls(
            text=field_of(obj, "text", str, ""),
            id=field_of(obj, "id", str),
            lang=field_of(obj, "lang", str),
            voice=field_of(obj, "voice", str) or field_of(obj, "speaker", str),
            instruct=field_of(obj, "instruct", str),
            priority=field_of(obj, "priority", str, "normal"),
            volume=_number(obj, "volume"),
            chime=field_of(obj, "chime", str),
            repeat=repeat,
            repeat_interval=_number(obj, "repeat_interval") or 0.0,
            ttl=_number(obj, "ttl"),
            expires_at=_number(obj, "expires_at"),
            interrupt=interrupt,
            session_id=field_of(obj, "sessionId", str),
            **extra,
        )


_SAY_JSON_FIELDS = [
    "text",
    "id",
    "lang",
    "voice",
    "instruct",
    "priority",
    "volume",
    "chime",
    "repeat",
    "repeat_interval",
    "ttl",
    "expires_at",
    "interrupt",
    "session_id",
]


@dataclass(frozen=True)
class Stop(Message):
    """`<base>/stop`: stop the current announcement, all of them, or one by id."""

    SUFFIX: ClassVar[str] = "stop"

    scope: str = "current"
    id: str | None = None

    def payload(self) -> bytes:
        return encode_json({"scope": self.scope, **({"id": self.id} if self.id else {})})

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> Stop:
        text = decode_text(payload).strip()
        if not text.startswith("{"):
            obj: dict[str, Any] = {"scope": text or "current"}
        else:
            obj = decode_json_object(text)
        scope = field_of(obj, "scope", str, "current")
        stop_id = field_of(obj, "id", str)
        if scope not in STOP_SCOPES:
            raise RequestError(f"unknown stop scope {scope!r}; expected one of {', '.join(STOP_SCOPES)}")
        if scope == "id" and not stop_id:
            raise RequestError("stop with scope 'id' needs an id")
        return cls(scope=scope, id=stop_id)


@dataclass(frozen=True)
class SetVolume(Message):
    """`<base>/volume/set`: master volume 0..1, as a plain number or {"volume": x}."""

    SUFFIX: ClassVar[str] = "volume/set"

    volume: float

    def payload(self) -> bytes:
        return repr(float(self.volume)).encode()

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> SetVolume:
        text = decode_text(payload).strip()
        if text.startswith("{"):
            value = field_of(decode_json_object(text), "volume", (int, float))
        else:
            try:
                value = float(text)
            except ValueError:
                raise RequestError(f"volume must be a number, got {text[:40]!r}") from None
        if value is None or not 0.0 <= float(value) <= 1.0:
            raise RequestError(f"volume must be between 0 and 1, got {value}")
        return cls(volume=float(value))


@dataclass(frozen=True)
class SetVoice(Message):
    """`<base>/voice/set`: the default voice (what Home Assistant's voice select publishes)."""

    SUFFIX: ClassVar[str] = "voice/set"

    voice: str

    def payload(self) -> bytes:
        return self.voice.encode("utf-8")

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> SetVoice:
        voice = decode_text(payload).strip()
        if not voice:
            raise RequestError("voice/set needs a voice name")
        return cls(voice=voice)


@dataclass(frozen=True)
class HomeAssistantStatus(Message):
    """`homeassistant/status`: Home Assistant's birth/will; `online` means send discovery again."""

    online: bool
    discovery_prefix: str = "homeassistant"

    def topic(self, base: str) -> str:
        return f"{self.discovery_prefix}/status"

    def payload(self) -> bytes:
        return b"online" if self.online else b"offline"

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> HomeAssistantStatus:
        return cls(online=payload.strip() == b"online", discovery_prefix=topic.rsplit("/", 1)[0])


INBOUND_TYPES: tuple[type[Message], ...] = (Say, Stop, SetVolume, SetVoice)


def parse_inbound(topics: Topics, topic: str, payload: bytes, meta: MqttMeta) -> Message:
    """The typed command for a message that arrived on one of `topics.subscriptions()`."""
    for cls in INBOUND_TYPES:
        if topic == cls.topic_for(topics.base):
            return cls.from_mqtt(topic, payload, meta)
    if topic == topics.ha_status:
        return HomeAssistantStatus.from_mqtt(topic, payload, meta)
    if topics.hermes:
        from qwen3tts.appliance.hermes import HermesSay

        if topic == HermesSay.TOPIC:
            return HermesSay.from_mqtt(topic, payload, meta)
    raise RequestError(f"no handler for topic {topic!r}")
