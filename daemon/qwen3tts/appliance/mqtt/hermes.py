"""The optional Rhasspy/Snips Hermes bridge: hermes/tts/say in, sayFinished / error/tts out.

Enabled by `MqttSettings.hermes`; requests whose siteId is not ours are ignored by the intake.
Payload shapes follow rhasspy-hermes (`rhasspyhermes/tts.py`): camelCase keys, `id` echoed back.
As in rhasspy-tts-cli-hermes, every say the bridge takes gets exactly one sayFinished, whether it
played, was refused, cancelled, expired or failed; refusals and failures also go to hermes/error/tts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from qwen3tts.appliance.mqtt.fields import SESSION_MAX_CHARS, field_of, id_of, name_of, number_of
from qwen3tts.appliance.mqtt.messages import Message, MqttMeta
from qwen3tts.appliance.mqtt.payload import decode_json_object, decode_text, encode_json


@dataclass(frozen=True)
class HermesSay(Message):
    """`hermes/tts/say` {text, lang, id, volume, siteId, sessionId}."""

    TOPIC: ClassVar[str] = "hermes/tts/say"
    max_bytes: ClassVar[int] = 0  # the policy's max_payload_bytes

    text: str
    id: str | None = None
    lang: str | None = None
    volume: float | None = None
    site_id: str = "default"
    session_id: str | None = None

    def topic(self, base: str) -> str:
        return self.TOPIC

    def payload(self) -> bytes:
        body = {"text": self.text, "siteId": self.site_id, "sessionId": self.session_id}
        body.update({k: v for k, v in (("id", self.id), ("lang", self.lang), ("volume", self.volume)) if v})
        return encode_json(body)

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> HermesSay:
        obj = decode_json_object(decode_text(payload))
        return cls(
            text=field_of(obj, "text", str, ""),
            id=id_of(obj),
            lang=name_of(obj, "lang"),
            volume=number_of(obj, "volume"),
            site_id=name_of(obj, "siteId", SESSION_MAX_CHARS) or "default",
            session_id=name_of(obj, "sessionId", SESSION_MAX_CHARS),
        )


@dataclass(frozen=True)
class HermesSayFinished(Message):
    """`hermes/tts/sayFinished` {id, siteId, sessionId}, sent after the last sample has played."""

    TOPIC: ClassVar[str] = "hermes/tts/sayFinished"

    id: str | None
    site_id: str = "default"
    session_id: str | None = None

    def topic(self, base: str) -> str:
        return self.TOPIC

    def payload(self) -> bytes:
        return encode_json({"id": self.id, "siteId": self.site_id, "sessionId": self.session_id})

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> HermesSayFinished:
        obj = decode_json_object(decode_text(payload))
        return cls(id=obj.get("id"), site_id=obj.get("siteId", "default"), session_id=obj.get("sessionId"))


@dataclass(frozen=True)
class HermesError(Message):
    """`hermes/error/tts` {error, context, siteId, sessionId}."""

    TOPIC: ClassVar[str] = "hermes/error/tts"

    error: str
    context: str | None = None
    site_id: str = "default"
    session_id: str | None = None

    def topic(self, base: str) -> str:
        return self.TOPIC

    def payload(self) -> bytes:
        return encode_json(
            {
                "error": self.error,
                "context": self.context,
                "siteId": self.site_id,
                "sessionId": self.session_id,
            }
        )

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> HermesError:
        obj = decode_json_object(decode_text(payload))
        return cls(
            error=obj.get("error", ""),
            context=obj.get("context"),
            site_id=obj.get("siteId", "default"),
            session_id=obj.get("sessionId"),
        )
