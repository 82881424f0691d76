"""One Wyoming client connection: events in on a reader task, audio out in order on a worker task.

Every error ends the connection: one `error` event with its code, then EOF (wyoming_endings.py has the
codes and the close). Home Assistant's client reads until audio-stop or EOF and passes over error
events, so a socket left open would hang it; wyoming-piper closes too. An event the server does not
take at that point is such an error too. A client that reads nothing for the write timeout is dropped
without one. Events are read while audio is written: a client that leaves cancels its engine requests
at once; every slot is released. A request that finds every slot taken waits for one in the gateway's
short queue (slots.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event, async_write_event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped

from qwen3tts.errors import RequestError
from qwen3tts.servers.gateway import Gateway
from qwen3tts.servers.pcm import CHANNELS, SAMPLE_WIDTH, to_s16le
from qwen3tts.servers.refusals import InvalidField
from qwen3tts.servers.speech_stream import SpeechStream
from qwen3tts.servers.wyoming_endings import (
    GONE,
    STALLED,
    ClientStalled,
    Ending,
    close_connection,
    error_code,
    failed,
    unexpected,
)
from qwen3tts.servers.wyoming_events import (
    BadEvent,
    EventTimeout,
    UnexpectedEvent,
    read_event,
    speakable,
    text_field,
    voice_fields,
)
from qwen3tts.settings import ServersSettings

log = logging.getLogger(__name__)

Work = Callable[[], Awaitable[None]]


class WyomingHandler(AsyncEventHandler):
    """One client connection: a reader task (events in), a worker task (audio out, in order), one ending."""

    def __init__(self, reader, writer, gateway: Gateway, info_event: Event, limits: ServersSettings,
                 client: str = "?"):  # fmt: skip
        super().__init__(reader, writer)
        self.gateway = gateway
        self.info_event = info_event
        self.limits = limits
        self.max_bytes = limits.max_body_bytes
        self.client = client
        self._work: asyncio.Queue[Work] = asyncio.Queue()
        self._working = False
        self._ended: asyncio.Future[Ending] = asyncio.get_running_loop().create_future()
        self._streaming: SpeechStream | None = None  # set between synthesize-start and synthesize-stop
        self._open: dict[SpeechStream, asyncio.TimerHandle] = {}  # with its max_request_s timer
        self._pause: asyncio.TimerHandle | None = None  # speaks a streamed sentence after a pause

    def finish(self, ending: Ending) -> None:
        """End the connection (the first ending counts); run() does the rest."""
        if not self._ended.done():
            self._ended.set_result(ending)

    async def stop(self) -> None:
        self.finish(failed("the server is shutting down", "shutdown"))

    async def run(self) -> None:
        tasks = [asyncio.create_task(self._read_events()), asyncio.create_task(self._do_work())]
        ending = STALLED  # cancelled from outside: drop the connection
        try:
            await asyncio.wait([self._ended, *tasks], return_when=asyncio.FIRST_COMPLETED)
            ending = self._ended.result() if self._ended.done() else self._broken(tasks)
        finally:
            self._cancel_pause()
            await _cancel(tasks)
            for stream, timer in self._open.items():  # every slot the connection held is released
                timer.cancel()
                stream.close(ending.outcome)
            await close_connection(self.reader, self.writer, ending, self.client, self.limits.write_timeout_s)

    def _broken(self, tasks: list[asyncio.Task]) -> Ending:
        """A task that ended without an ending: a bug, logged with its traceback and answered."""
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                exc = task.exception()
                log.error("wyoming: connection of %s failed", self.client, exc_info=exc)
                return failed(f"internal error: {type(exc).__name__}", type(exc).__name__)
        return STALLED

    # ---- events in ----

    async def _read_events(self) -> None:
        event = None
        try:
            while first := await self._first_byte():
                event = await read_event(self.reader, first, self.max_bytes, self.limits.read_timeout_s)
                await self.handle_event(event)
            self.finish(GONE)
        except BadEvent as exc:
            self.finish(failed(str(exc), exc.code))
        except RequestError as exc:
            self.finish(failed(str(exc), error_code(exc)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a field of the wrong shape
            what = event.type if event is not None else "event"
            self.finish(failed(f"malformed {what} event: {type(exc).__name__}: {exc}", "bad_event"))
        except (asyncio.IncompleteReadError, ConnectionError):
            self.finish(GONE)

    async def _first_byte(self) -> bytes:
        """The next event's first byte (b'' at EOF); EventTimeout once idle for the idle timeout."""
        idle_s = self.limits.idle_timeout_s
        while True:
            try:
                return await asyncio.wait_for(self.reader.read(1), idle_s)
            except TimeoutError:
                if not self._working and self._work.empty():
                    raise EventTimeout(f"no event for {idle_s:g} s and nothing to synthesise") from None

    async def handle_event(self, event: Event) -> bool:
        kind, data = event.type, event.data
        if Describe.is_type(kind):
            self._work.put_nowait(lambda: self.write_event(self.info_event))
        elif Ping.is_type(kind):
            self._work.put_nowait(lambda: self.write_event(Pong(text=Ping.from_event(event).text).event()))
        elif Synthesize.is_type(kind):
            if self._streaming is None:  # inside a stream it repeats the streamed text for old servers
                await self._synthesize(text_field(data, kind), *voice_fields(data))
        elif SynthesizeStart.is_type(kind) and self._streaming is None:
            name, language = voice_fields(data)
            slot = await self._wait_for_slot()
            self._streaming = self._opened(self.gateway.open_stream("wyoming", name, language, slot=slot))
        elif SynthesizeChunk.is_type(kind) and self._streaming is not None:
            self._stream_chunk(self._streaming, text_field(data, kind))
        elif SynthesizeStop.is_type(kind) and self._streaming is not None:
            stream, self._streaming = self._streaming, None
            self._cancel_pause()
            self._queue_sentences(stream, stream.flush())
            self._work.put_nowait(lambda: self._stream_stopped(stream))
        else:  # answered, never passed over: a client must not wait for what will not come
            raise UnexpectedEvent(unexpected(kind))
        return True

    async def _synthesize(self, text: str, name: str | None, language: str | None) -> None:
        if text.strip() and not speakable(text):
            self.gateway.metrics.requests.labels("wyoming", "rejected").inc()
            raise InvalidField("text", "text has nothing to speak (only white space or invisible characters)")
        slot = await self._wait_for_slot()
        stream = self._opened(self.gateway.open("wyoming", text, name, language, slot=slot))
        self._work.put_nowait(lambda: self._speak(stream, close=True))

    async def _wait_for_slot(self) -> bool:
        """True once this request holds a slot it waited for in the gateway's short queue (Busy when it is
        full or `max_request_s` passes); False when one is free now (opening takes it)."""
        if self.gateway.slots.free:
            return False
        await self.gateway.wait_for_slot("wyoming", self.limits.max_request_s)
        return True

    def _stream_chunk(self, stream: SpeechStream, text: str) -> None:
        """Complete sentences go at once; text that ends a sentence goes after a pause with no more text
        (`servers.wyoming.sentence_wait_s`), so a language model that stops to think is not left silent."""
        self._cancel_pause()
        self._queue_sentences(stream, stream.feed(text))
        if stream.ends_sentence():
            wait_s = self.limits.wyoming.sentence_wait_s
            self._pause = asyncio.get_running_loop().call_later(wait_s, self._paused, stream)

    def _paused(self, stream: SpeechStream) -> None:
        self._pause = None
        if stream is self._streaming and stream.outcome is None:
            self._queue_sentences(stream, stream.flush())

    def _cancel_pause(self) -> None:
        if self._pause is not None:
            self._pause.cancel()
            self._pause = None

    def _opened(self, stream: SpeechStream) -> SpeechStream:
        for done in [s for s in self._open if s.outcome is not None]:
            self._open.pop(done).cancel()
        loop = asyncio.get_running_loop()
        self._open[stream] = loop.call_later(self.limits.max_request_s, self._expired, stream)
        return stream

    def _expired(self, stream: SpeechStream) -> None:
        if stream.outcome is None:
            text = f"request still running after {self.limits.max_request_s:g} s (servers.max_request_s)"
            self.finish(failed(text, "timeout", outcome="timeout"))

    def _queue_sentences(self, stream: SpeechStream, sentences: list[str]) -> None:
        for sentence in sentences:
            self._work.put_nowait(lambda sentence=sentence: self._speak_sentence(stream, sentence))

    # ---- audio out (the worker) ----

    async def _speak_sentence(self, stream: SpeechStream, sentence: str) -> None:
        if stream.outcome is not None or not speakable(sentence):
            return  # ended earlier, or nothing to say (white space, zero-width characters)
        try:
            stream.say(sentence)
        except RequestError:
            stream.close("rejected")
            raise
        await self._speak(stream, close=False)

    async def _stream_stopped(self, stream: SpeechStream) -> None:
        stream.close()
        await self.write_event(SynthesizeStopped().event())

    async def _speak(self, stream: SpeechStream, close: bool) -> None:
        """audio-start, one audio-chunk per engine chunk, audio-stop; RequestError if synthesis fails.

        A request of its own (`close`) frees its slot before audio-stop, so a client that asks again as
        soon as it has read audio-stop is never refused as busy by its own last request.
        """
        rate = self.gateway.offer.sample_rate
        try:
            await self.write_event(AudioStart(rate=rate, width=SAMPLE_WIDTH, channels=CHANNELS).event())
            async for pcm in stream.pcm():
                chunk = AudioChunk(rate=rate, width=SAMPLE_WIDTH, channels=CHANNELS, audio=to_s16le(pcm))
                await self.write_event(chunk.event())
            if close:
                stream.close()
            await self.write_event(AudioStop().event())
        except RequestError:
            stream.close("error")
            raise
        except (ConnectionError, asyncio.CancelledError):  # stalled, gone, or the connection is dropped
            if close:  # "cancelled" even between two sentences, when no engine work is left to cancel
                stream.close("cancelled")
            raise

    async def write_event(self, event: Event) -> None:
        try:  # wait_for, not asyncio.timeout (see wyoming_events.read_event)
            await asyncio.wait_for(async_write_event(event, self.writer), self.limits.write_timeout_s)
        except TimeoutError:
            raise ClientStalled(f"client read nothing for {self.limits.write_timeout_s:g} s") from None

    async def _do_work(self) -> None:
        while True:
            work = await self._work.get()
            self._working = True
            try:
                await work()
            except RequestError as exc:
                return self.finish(failed(str(exc), error_code(exc)))
            except (ConnectionError, RuntimeError) as exc:  # the socket broke, or the client stopped reading
                log.info("wyoming %s: connection dropped: %s", self.client, exc)
                return self.finish(STALLED)
            except Exception as exc:  # supervisor of this connection's work: a bug in one request is
                # logged and answered, never lost, and ends only this connection
                log.exception("wyoming: work for %s failed; closing the connection", self.client)
                return self.finish(failed(f"internal error: {type(exc).__name__}", type(exc).__name__))
            finally:
                self._working = False


async def _cancel(tasks: list[asyncio.Task]) -> None:
    """Cancel the connection's tasks and wait until they have ended. On Python 3.11 `asyncio.wait_for`
    (every read and write here) can swallow a cancellation that lands as the awaited write completes
    (fixed in 3.12): the worker then went on and waited for more work, and the connection was never
    closed. A task still running after a cancel is cancelled again."""
    while pending := [task for task in tasks if not task.done()]:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=0.05)
    await asyncio.gather(*tasks, return_exceptions=True)  # every exception retrieved, none raised
