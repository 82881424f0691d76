"""The appliance's commands besides `say`: `stop`, `volume/set` and `voice/set` (topics below the base
topic, messages.py has the base). Each payload is small (COMMAND_MAX_BYTES), a plain value or a JSON
object; a bad one raises `RequestError` with the reason the intake puts in a `rejected` event.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from qwen3tts.appliance.mqtt.fields import NAME_MAX_CHARS, id_of, name_of, number_of
from qwen3tts.appliance.mqtt.messages import Message, MqttMeta
from qwen3tts.appliance.mqtt.payload import check_clean, decode_json_object, decode_text, encode_json, quote
from qwen3tts.errors import RequestError

STOP_SCOPES = ("current", "all", "id")


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
            obj: dict[str, Any] = {
                "scope": check_clean("stop scope", text, allow_line_breaks=False) or "current"
            }
        else:
            obj = decode_json_object(text)
        scope = name_of(obj, "scope") or "current"
        stop_id = id_of(obj)
        if scope not in STOP_SCOPES:
            raise RequestError(f"unknown stop scope {quote(scope)}; expected one of {', '.join(STOP_SCOPES)}")
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
            value = number_of(decode_json_object(text), "volume")
        else:
            try:
                value = float(text)
            except ValueError:
                raise RequestError(f"volume must be a number, got {quote(text, 40)}") from None
        if value is None or not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise RequestError(
                f"volume must be between 0 and 1, got {quote(text, 40) if value is None else value}"
            )
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
        voice = check_clean("voice", decode_text(payload), allow_line_breaks=False).strip()
        if not voice:
            raise RequestError("voice/set needs a voice name")
        if len(voice) > NAME_MAX_CHARS:
            raise RequestError(f"voice name too long ({len(voice)} characters > {NAME_MAX_CHARS})")
        return cls(voice=voice)
