"""The Wyoming TTS server (Home Assistant's Wyoming integration), on the `wyoming` package's handler.

describe -> info (one TTS program, one voice per voice offered, language codes); synthesize ->
audio-start, an audio-chunk per engine PCM chunk as it is produced, audio-stop. Streaming text
(synthesize-start / -chunk / -stop -> synthesize-stopped) synthesises each sentence as soon as it is
complete, each with its own audio-start .. audio-stop, the way wyoming-piper answers it; the plain
`synthesize` Home Assistant also sends inside a stream (for old servers) is ignored there.

Events are read while audio is being written, so a client that disconnects (EOF) cancels its engine
requests at once (every stream the connection opened); a client must keep its connection open until
audio-stop, as Home Assistant does. Each event is parsed by the wyoming library; the handler turns it
into a SpeechStream (streams.py), which submits engine requests and yields their PCM.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_read_event
from wyoming.info import Attribution, Describe, Info, TtsProgram, TtsVoice
from wyoming.server import AsyncEventHandler
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from qwen3tts import __version__
from qwen3tts.errors import RequestError
from qwen3tts.servers.offer import Offer
from qwen3tts.servers.pcm import CHANNELS, SAMPLE_WIDTH, to_s16le
from qwen3tts.servers.streams import Busy, InvalidField, SpeechStream, StreamPool

log = logging.getLogger(__name__)

ATTRIBUTION = Attribution(name="Qwen", url="https://github.com/QwenLM/Qwen3-TTS")
Work = Callable[[], Awaitable[None]]


class EventTooLarge(Exception):
    """An event's header, data and payload together exceed the size limit."""


def wyoming_info(offer: Offer) -> Info:
    """The answer to `describe`: one TTS program, a voice per voice offered, every language code."""
    codes = list(offer.language_codes)
    voices = [
        TtsVoice(
            name=name,
            description=f"{name} ({offer.name})",
            attribution=ATTRIBUTION,
            installed=True,
            version=None,
            languages=codes,
        )
        for name in offer.voice_names
    ]
    program = TtsProgram(
        name="qwen3tts",
        description=f"Qwen3-TTS on OpenVINO ({offer.name})",
        attribution=ATTRIBUTION,
        installed=True,
        version=__version__,
        voices=voices,
        supports_synthesize_streaming=True,
    )
    return Info(tts=[program])


async def read_limited_event(reader: asyncio.StreamReader, max_bytes: int) -> Event | None:
    """The next event, or None at EOF; EventTooLarge before reading a body over `max_bytes`.

    The header line is bounded by the StreamReader's limit (set to max_bytes at start_server); the
    lengths it announces are checked before the body is read, then the library parses the event.
    """
    try:
        line = await reader.readline()
    except ValueError as exc:  # LimitOverrunError: a header line longer than the limit
        raise EventTooLarge(f"event header longer than {max_bytes} bytes") from exc
    if not line:
        return None
    try:
        header = json.loads(line)
        body = int(header.get("data_length") or 0) + int(header.get("payload_length") or 0)
    except (ValueError, TypeError, AttributeError):
        return None  # not a Wyoming event: end the connection like the library does
    if body < 0 or len(line) + body > max_bytes:
        raise EventTooLarge(f"event of {len(line) + body} bytes exceeds the limit of {max_bytes}")
    buffered = asyncio.StreamReader()
    buffered.feed_data(line + (await reader.readexactly(body) if body else b""))
    buffered.feed_eof()
    return await async_read_event(buffered)


class WyomingHandler(AsyncEventHandler):
    """One client connection: events in, audio out, work done in order by one worker task."""

    def __init__(self, reader, writer, pool: StreamPool, info_event: Event, max_bytes: int):
        super().__init__(reader, writer)
        self.pool = pool
        self.info_event = info_event
        self.max_bytes = max_bytes
        self._work: asyncio.Queue[Work] = asyncio.Queue()
        self._worker = asyncio.create_task(self._do_work(), name="wyoming-work")
        self._streaming: SpeechStream | None = None  # set between synthesize-start and synthesize-stop
        self._open: list[SpeechStream] = []  # this connection's streams, closed when it ends

    async def run(self) -> None:
        try:
            while True:
                try:
                    event = await read_limited_event(self.reader, self.max_bytes)
                except EventTooLarge as exc:
                    log.warning("wyoming: %s; disconnecting", exc)
                    await self._error(str(exc), "too_large")
                    break
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                if event is None:
                    break
                try:
                    await self.handle_event(event)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:  # hostile or broken event
                    why = f"malformed {event.type} event: {type(exc).__name__}: {exc}"
                    await self._error(why, "bad_event")
        finally:
            self._worker.cancel()  # the client is gone: stop its synthesis now
            await asyncio.gather(self._worker, return_exceptions=True)
            for stream in self._open:  # also those whose work never started
                stream.close()
            self.writer.close()

    async def handle_event(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            await self.write_event(self.info_event)
        elif Synthesize.is_type(event.type) and self._streaming is None:
            await self._synthesize(Synthesize.from_event(event))
        elif SynthesizeStart.is_type(event.type):
            await self._stream_start(SynthesizeStart.from_event(event))
        elif SynthesizeChunk.is_type(event.type) and self._streaming is not None:
            stream = self._streaming
            try:
                self._queue_sentences(stream, stream.feed(SynthesizeChunk.from_event(event).text))
            except RequestError as exc:
                await self._error(str(exc), _code(exc))
        elif SynthesizeStop.is_type(event.type) and self._streaming is not None:
            stream, self._streaming = self._streaming, None
            self._queue_sentences(stream, stream.flush())
            self._work.put_nowait(lambda: self._stream_stopped(stream))
        return True

    def _opened(self, stream: SpeechStream) -> SpeechStream:
        self._open = [s for s in self._open if s.outcome is None] + [stream]
        return stream

    # ---- one synthesize event ----

    async def _synthesize(self, synthesize: Synthesize) -> None:
        name, language = _voice_fields(synthesize.voice)
        try:
            stream = self._opened(self.pool.open("wyoming", synthesize.text, name, language))
        except RequestError as exc:
            await self._error(str(exc), _code(exc))
            return
        self._work.put_nowait(lambda: self._speak(stream, close=True))

    # ---- streaming text ----

    async def _stream_start(self, start: SynthesizeStart) -> None:
        name, language = _voice_fields(start.voice)
        try:
            stream = self._opened(self.pool.open_stream("wyoming", name, language))
        except RequestError as exc:
            await self._error(str(exc), _code(exc))
            return
        if self._streaming is not None:  # a second start: the first can no longer be stopped
            self._streaming.close("cancelled")
        self._streaming = stream

    def _queue_sentences(self, stream: SpeechStream, sentences: list[str]) -> None:
        for sentence in sentences:
            self._work.put_nowait(lambda sentence=sentence: self._speak_sentence(stream, sentence))

    async def _speak_sentence(self, stream: SpeechStream, sentence: str) -> None:
        if stream.outcome is not None:
            return  # failed earlier: the rest of this stream is dropped
        try:
            stream.say(sentence)
        except RequestError as exc:
            stream.close("rejected")
            await self._error(str(exc), _code(exc))
            return
        await self._speak(stream, close=False)

    async def _stream_stopped(self, stream: SpeechStream) -> None:
        stream.close()
        await self.write_event(SynthesizeStopped().event())

    # ---- audio out ----

    async def _speak(self, stream: SpeechStream, close: bool) -> None:
        """audio-start, one audio-chunk per engine chunk, audio-stop; an error event if synthesis fails.

        However it ends early (cancelled: the client is gone; the connection broke) the stream closes,
        which cancels its engine request.
        """
        rate = self.pool.offer.sample_rate
        spoken = False
        try:
            await self.write_event(AudioStart(rate=rate, width=SAMPLE_WIDTH, channels=CHANNELS).event())
            async for pcm in stream.pcm():
                chunk = AudioChunk(rate=rate, width=SAMPLE_WIDTH, channels=CHANNELS, audio=to_s16le(pcm))
                await self.write_event(chunk.event())
            await self.write_event(AudioStop().event())
            spoken = True
        except RequestError as exc:
            stream.close("error")
            await self._error(str(exc), _code(exc))
        finally:
            if close or not spoken:
                stream.close()

    async def _do_work(self) -> None:
        while True:
            work = await self._work.get()
            try:
                await work()
            except (ConnectionError, RuntimeError) as exc:  # the client's socket broke while writing
                log.info("wyoming: client connection lost: %s", exc)
                self.reader.feed_eof()
                return
            except Exception as exc:  # supervisor of this connection's work: a bug in one request is
                # logged and answered, never lost (gather() in run() would drop the task's exception)
                peer = self.writer.get_extra_info("peername")
                log.exception("wyoming: work for %s failed; closing the connection", peer)
                await self._error(f"internal error: {type(exc).__name__}", type(exc).__name__)
                self.reader.feed_eof()
                return

    async def _error(self, text: str, code: str) -> None:
        with contextlib.suppress(ConnectionError):
            await self.write_event(Error(text=text, code=code).event())


def _voice_fields(voice: SynthesizeVoice | None) -> tuple[str | None, str | None]:
    """The voice name and language of a synthesize event; TypeError (a bad_event) if not strings."""
    name, language = (voice.name, voice.language) if voice is not None else (None, None)
    for value in (name, language):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"voice name and language must be strings, got {type(value).__name__}")
    return name, language


def _code(exc: RequestError) -> str:
    """The error event's code: `busy`, else the class name (a refused field keeps `RequestError`)."""
    if isinstance(exc, Busy):
        return "busy"
    return "RequestError" if isinstance(exc, InvalidField) else type(exc).__name__


async def start_wyoming(sock, pool: StreamPool, max_bytes: int) -> Callable[[], Awaitable[None]]:
    """Serve Wyoming on an already bound socket; returns the coroutine function that stops it.

    The socket is bound by the caller, so a busy port is an error at start-up, not in this loop.
    """
    handlers: set[WyomingHandler] = set()

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Built per connection: the registered voices may have changed on SIGHUP.
        handler = WyomingHandler(reader, writer, pool, wyoming_info(pool.offer).event(), max_bytes)
        handlers.add(handler)
        try:
            await handler.run()
        finally:
            handlers.discard(handler)

    server = await asyncio.start_server(connected, sock=sock, limit=max_bytes)

    async def stop() -> None:
        server.close()
        for handler in list(handlers):
            await handler.stop()  # EOF to its read loop: it cancels its work and closes the connection
        await server.wait_closed()

    return stop
