"""POST /v1/audio/speech: an OpenAI speech request checked, synthesised, stretched, encoded and streamed.

The body is OpenAI's: `input`, `voice`, `response_format` (mp3 by default; encoding.py), `speed`
(0.25-4.0, a number or a numeric string; by time-scale modification: tempo.py), `instructions`,
`model` (any name), plus our `language` and `ssml` (true reads `input` as SSML; an `input` that
starts with `<speak` is read so anyway, as over MQTT). OpenAI's voice names (`alloy`, ... every current
one) are mapped to the bundle's voices by `servers.http.voice_map`; a bundle or registered voice of the
same name comes first. What the bundle cannot do is ignored with a `Qwen3tts-Warning` header, as MQTT
puts it in the `queued` event's warnings: instructions on a bundle without an instruct turn, a mapped
voice the bundle does not have, SSML markup that is not supported (unknown elements). Anything else it
cannot honour is a 400 naming the parameter and the values it takes.

Audio streams as it is produced. Once the headers are out an error cannot become a status code: a
synthesis or encoder failure, or a request that runs past `servers.max_request_s`, ends the body early
(the client sees a cut-off response) and cancels the engine request at once.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from dataclasses import dataclass

import numpy as np
from starlette.responses import StreamingResponse

from qwen3tts.errors import ConfigError, RequestError
from qwen3tts.servers.encoding import DEFAULT_FORMAT, FORMATS, AudioFormat, Encoder, EncoderError
from qwen3tts.servers.gateway import Gateway
from qwen3tts.servers.http_request import ApiError
from qwen3tts.servers.offer import Offer
from qwen3tts.servers.refusals import Busy, InvalidField
from qwen3tts.servers.speech_stream import SpeechStream
from qwen3tts.synthesis import checked_instruct
from qwen3tts.tempo import MAX_SPEED, MIN_SPEED, TimeStretch
from qwen3tts.text.checks import quote

log = logging.getLogger(__name__)

PARAMS = {"text": "input", "voice": "voice", "language": "language"}  # InvalidField.field -> OpenAI param
WARNING_HEADER = "Qwen3tts-Warning"
NUMBER = re.compile(r"[+-]?(?:[0-9]{1,6}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})")
"""A `speed` sent as a string: plain decimal notation only (float() would also take "nan", "1e9", "1_0")."""


@dataclass(frozen=True)
class VoiceMap:
    """OpenAI voice names (lower case) -> the bundle voices that speak for them."""

    aliases: dict[str, str]

    @classmethod
    def from_settings(cls, entries: tuple[str, ...]) -> VoiceMap:
        """From `servers.http.voice_map` (`alloy=vivian` each); ConfigError naming a malformed entry."""
        aliases = {}
        for index, entry in enumerate(entries):
            name, sep, voice = (part.strip() for part in entry.partition("="))
            if not sep or not name or not voice:
                raise ConfigError(f"servers.http.voice_map[{index}]: expected NAME=VOICE, got {entry!r}")
            aliases[name.lower()] = voice
        return cls(aliases)

    def resolve(self, offer: Offer, name: str | None) -> tuple[str | None, tuple[str, ...]]:
        """(the voice for the engine, warnings); ApiError 400 listing the voices for an unknown name."""
        try:
            return offer.resolve_voice(name), ()
        except RequestError:
            target = self.aliases.get((name or "").strip().lower())
            if target is None:
                known = ", ".join((*offer.voice_names, *sorted(self.aliases)))
                message = f"unknown voice {quote(name, 64)}; known: {known}"
                raise ApiError(400, message, "voice", "unknown_voice") from None
        try:
            return offer.resolve_voice(target), ()
        except RequestError:
            warning = (
                f"voice {name.strip()} maps to {target}, which this bundle lacks: the default voice speaks"
            )
            return offer.resolve_voice(None), (warning,)


@dataclass
class SpeechOrder:
    """A checked request: its stream (a slot held, the first piece submitted) and how to deliver it."""

    stream: SpeechStream
    fmt: AudioFormat
    speed: float
    warnings: tuple[str, ...]


def open_speech(gateway: Gateway, voices: VoiceMap, body: dict) -> SpeechOrder:
    """Check an OpenAI speech request and submit it; ApiError with the right status otherwise."""
    fmt = _format(body.get("response_format"))
    speed = _speed(body.get("speed", 1.0))
    if body.get("stream_format", "audio") != "audio":
        raise ApiError(400, "stream_format must be 'audio' (no server-sent events)", "stream_format")
    for key in ("model", "voice", "language", "instructions"):
        if body.get(key) is not None and not isinstance(body[key], str):
            raise ApiError(400, f"{key} must be a string", key)
    voice, warnings = voices.resolve(gateway.offer, body.get("voice"))
    try:  # the rule MQTT's `instruct` follows too (synthesis.py)
        instructions, ignored = checked_instruct(
            body.get("instructions"), gateway.max_text_chars, gateway.offer.supports_instruct, "instructions"
        )
    except RequestError as exc:
        raise ApiError(400, str(exc), "instructions") from None
    warnings = (*warnings, *ignored)
    ssml = body.get("ssml")
    if ssml is not None and not isinstance(ssml, bool):
        raise ApiError(400, "ssml must be true or false", "ssml")
    try:
        stream = gateway.open(
            "http",
            body.get("input"),
            voice,
            body.get("language"),
            instructions,
            ssml,
            first_chunk_frames=fmt.first_chunk_frames,
        )
    except Busy as exc:
        raise ApiError(429, str(exc), None, "busy") from exc
    except InvalidField as exc:
        raise ApiError(400, str(exc), PARAMS[exc.field]) from exc
    except RequestError as exc:  # the engine refused the text at submit
        raise ApiError(400, str(exc), "input") from exc
    return SpeechOrder(stream, fmt, speed, (*warnings, *stream.warnings))


def _format(value: object) -> AudioFormat:
    if value is None:
        return FORMATS[DEFAULT_FORMAT]
    if not isinstance(value, str) or value not in FORMATS:
        message = f"response_format {quote(value, 40)} is not supported; use one of: {', '.join(FORMATS)}"
        raise ApiError(400, message, "response_format", "unsupported_format")
    return FORMATS[value]


def _speed(value: object) -> float:
    """A number, or a numeric string ("1.25": some clients send the field as text), within the range."""
    number = float(value) if isinstance(value, str) and NUMBER.fullmatch(value.strip()) else value
    if (
        isinstance(number, bool)
        or not isinstance(number, int | float)
        or not MIN_SPEED <= number <= MAX_SPEED
    ):
        message = f"speed {quote(value, 40)} is not supported: use a number from {MIN_SPEED} to {MAX_SPEED}"
        raise ApiError(400, message, "speed", "unsupported_speed")
    return float(number)


class _Pipeline:
    """Engine PCM -> stretched -> encoded bytes, for one response; runs in an executor thread, while the
    loop may close it (a client gone): the lock keeps the C libraries from running on freed state."""

    def __init__(self, fmt: AudioFormat, speed: float, rate: int):
        self.encoder: Encoder = fmt.encoder(rate)
        self.stretch = TimeStretch(speed, rate) if speed != 1.0 else None
        self._lock = threading.Lock()
        self._closed = False

    def process(self, pcm: np.ndarray) -> bytes:
        with self._lock:
            if self._closed:
                return b""
            return self.encoder.encode(self.stretch.push(pcm) if self.stretch else pcm)

    def finish(self) -> bytes:
        with self._lock:
            if self._closed:
                return b""
            tail = self.encoder.encode(self.stretch.finish()) if self.stretch else b""
            self._closed = True
            return tail + self.encoder.finish()

    def close(self) -> None:
        with self._lock:
            if self.stretch is not None:
                self.stretch.close()
            if not self._closed:
                self._closed = True
                self.encoder.close()


class SpeechResponse(StreamingResponse):
    """Streams one order; however the response ends (done, client gone, error) the stream closes,
    which cancels its engine request at once. A response cut off before its last message counts as
    cancelled even when the engine had already finished (a fast machine, a client that stopped reading)."""

    def __init__(self, order: SpeechOrder, rate: int, max_request_s: float):
        self.order, self.rate, self.max_request_s = order, rate, max_request_s
        self._delivered = False  # the last body message went out
        headers = {WARNING_HEADER: _header_text("; ".join(order.warnings))} if order.warnings else None
        super().__init__(iter(()), media_type=order.fmt.media_type, headers=headers)

    async def stream_response(self, send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        if await self._stream_body(send):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            self._delivered = True
        # else: returning without the last message makes uvicorn close the connection: a cut-off body

    async def _stream_body(self, send) -> bool:
        stream, loop = self.order.stream, asyncio.get_running_loop()
        try:
            pipeline = _Pipeline(self.order.fmt, self.order.speed, self.rate)
        except EncoderError as exc:
            return self._failed("the encoder did not start", exc)
        try:
            async with asyncio.timeout(self.max_request_s):
                async for pcm in stream.pcm():
                    data = await loop.run_in_executor(None, pipeline.process, pcm)
                    if data:
                        await send({"type": "http.response.body", "body": data, "more_body": True})
                tail = await loop.run_in_executor(None, pipeline.finish)
            await send({"type": "http.response.body", "body": tail, "more_body": True})
            return True
        except EncoderError as exc:
            return self._failed("encoding failed mid-stream", exc)
        except RequestError as exc:
            return self._failed("synthesis failed mid-stream", exc)
        except TimeoutError:
            return self._failed("stopped", f"longer than servers.max_request_s ({self.max_request_s:g} s)")
        finally:
            pipeline.close()

    def _failed(self, what: str, why) -> bool:
        log.error("%s: %s: %s", self.order.stream.id, what, why)
        self.order.stream.close("error")  # cancels the engine request now, not when the socket closes
        return False

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.order.stream.close(None if self._delivered else "cancelled")


def _header_text(text: str) -> str:
    """A header value (latin-1 only): anything else escaped."""
    return text.encode("ascii", "backslashreplace").decode("ascii")
