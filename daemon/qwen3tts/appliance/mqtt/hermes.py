"""The optional Rhasspy/Snips Hermes bridge: hermes/tts/say in, sayFinished / error/tts out.

Enabled by `MqttSettings.hermes`; requests whose siteId is not ours are ignored by the intake.
Payload shapes follow rhasspy-hermes (`rhasspyhermes/tts.py`): camelCase keys, `id` echoed back.
As in rhasspy-tts-cli-hermes, every say the bridge takes gets exactly one sayFinished, whether it
played, was refused, cancelled, expired or failed; refusals and failures also go to hermes/error/tts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from qwen3tts.appliance.mqtt.fields import SESSION_MAX_CHARS, id_of, name_of
from qwen3tts.appliance.mqtt.messages import Message, MqttMeta
from qwen3tts.appliance.mqtt.payload import decode_json_object, decode_text, encode_json, quote
from qwen3tts.errors import RequestError


@dataclass(frozen=True)
class HermesSay(Message):
    """`hermes/tts/say` {text, lang, id, volume, siteId, sessionId}, read by validate.py `read_hermes_say`."""

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


# --- satellites: the audio server of another site, and the voice list -------------------------------

AUDIO_SERVER = "hermes/audioServer"
PLAY_FINISHED_MAX_BYTES = 1024
"""playFinished carries an id and a siteId; anything longer is not one."""


def play_finished_topic(site_id: str) -> str:
    return f"{AUDIO_SERVER}/{site_id}/playFinished"


@dataclass(frozen=True)
class HermesPlayBytes(Message):
    """`hermes/audioServer/<siteId>/playBytes/<requestId>`: one whole WAV file for a satellite to play."""

    site_id: str
    request_id: str
    wav: bytes

    def topic(self, base: str) -> str:
        return f"{AUDIO_SERVER}/{self.site_id}/playBytes/{self.request_id}"

    def payload(self) -> bytes:
        return self.wav

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> HermesPlayBytes:
        site, _, request_id = topic.removeprefix(f"{AUDIO_SERVER}/").partition("/playBytes/")
        return cls(site_id=site, request_id=request_id, wav=payload)


@dataclass(frozen=True)
class HermesPlayFinished(Message):
    """`hermes/audioServer/<siteId>/playFinished` {id, siteId}: the satellite played playBytes/<id>."""

    max_bytes: ClassVar[int] = PLAY_FINISHED_MAX_BYTES

    id: str
    site_id: str

    def topic(self, base: str) -> str:
        return play_finished_topic(self.site_id)

    def payload(self) -> bytes:
        return encode_json({"id": self.id, "siteId": self.site_id})

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> HermesPlayFinished:
        """The siteId is the topic's (the one we subscribed to); a payload naming another is refused."""
        site = topic.removeprefix(f"{AUDIO_SERVER}/").removesuffix("/playFinished")
        obj = decode_json_object(decode_text(payload))
        request_id = id_of(obj)
        if request_id is None:
            raise RequestError("field 'id' is required")
        named = name_of(obj, "siteId", SESSION_MAX_CHARS)
        if named not in (None, site):
            raise RequestError(f"field 'siteId' {quote(named)} disagrees with the topic's {quote(site)}")
        return cls(id=request_id, site_id=site)


GET_VOICES_TOPICS = ("rhasspy/tts/getVoices", "hermes/tts/getVoices")
"""Rhasspy asks on rhasspy/tts/getVoices; hermes/tts/getVoices is served too (same shape)."""


@dataclass(frozen=True)
class HermesGetVoices(Message):
    """`rhasspy/tts/getVoices` (or `hermes/tts/getVoices`) {id, siteId}: which voices this TTS has."""

    namespace: str = "rhasspy"
    """`rhasspy` or `hermes`: the answer goes to <namespace>/tts/voices."""
    id: str | None = None
    site_id: str = "default"

    def topic(self, base: str) -> str:
        return f"{self.namespace}/tts/getVoices"

    def payload(self) -> bytes:
        return encode_json({"id": self.id, "siteId": self.site_id})

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> HermesGetVoices:
        obj = decode_json_object(decode_text(payload)) if payload.strip() else {}
        return cls(
            namespace=topic.split("/", 1)[0],
            id=id_of(obj),
            site_id=name_of(obj, "siteId", SESSION_MAX_CHARS) or "default",
        )


@dataclass(frozen=True)
class HermesVoices(Message):
    """`<namespace>/tts/voices` {voices: [{voiceId, description}], id, siteId}, the getVoices answer."""

    voices: tuple[tuple[str, str], ...]
    """(voiceId, description) of every voice."""
    id: str | None = None
    site_id: str = "default"
    namespace: str = "rhasspy"

    @classmethod
    def answering(cls, ask: HermesGetVoices, names: tuple[str, ...], registered: set[str]) -> HermesVoices:
        """The answer to `ask`: every voice by name, described as a preset speaker or a registered voice."""
        voices = tuple((n, "registered voice" if n in registered else "preset speaker") for n in names)
        return cls(voices, id=ask.id, site_id=ask.site_id, namespace=ask.namespace)

    def topic(self, base: str) -> str:
        return f"{self.namespace}/tts/voices"

    def payload(self) -> bytes:
        voices = [{"voiceId": name, "description": text} for name, text in self.voices]
        return encode_json({"voices": voices, "id": self.id, "siteId": self.site_id})

    @classmethod
    def from_mqtt(cls, topic: str, payload: bytes, meta: MqttMeta | None = None) -> HermesVoices:
        obj = decode_json_object(decode_text(payload))
        voices = tuple((v["voiceId"], v.get("description", "")) for v in obj.get("voices", ()))
        return cls(voices, obj.get("id"), obj.get("siteId", "default"), topic.split("/", 1)[0])
