"""Network requests -> the shared engine, streamed back as PCM on the servers' event loop.

One `SpeechStream` carries one network request from open to close: its validated voice, language and
instruct, the pieces of text not yet submitted, the engine handle of the piece being synthesised, and
its figures. Text is validated like an announcement's (length, voice, language), split by the same
function, and submitted one piece at a time at BACKGROUND_RANK: below every announcement, so an
emergency preempts it and the speaker never queues behind a network client. Audio goes back to the
caller only. Closing a stream (client gone, error, shutdown) cancels its engine request at once.

The `StreamPool` holds the slots (slots.py): at most `max_concurrent_requests` streams exist; one more
is refused as Busy, or (Wyoming) waits in a short queue for one first. Both live on the servers' event
loop thread; blocking waits on engine handles run in the pool's executor threads.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from qwen3tts.engine.runaway import runaway_warning
from qwen3tts.errors import RequestError
from qwen3tts.servers.metrics import ServerMetrics
from qwen3tts.servers.offer import Offer
from qwen3tts.servers.slots import NoSlot, Slots
from qwen3tts.servers.streamed_text import StreamedText
from qwen3tts.synthesis import (
    BACKGROUND_RANK,
    TextOptions,
    checked_speech,
    read_pieces,
    sentence_request,
    speaks,
)
from qwen3tts.tempo import TimeStretch
from qwen3tts.text import Piece

log = logging.getLogger(__name__)


class Busy(RequestError):
    """Every network request slot is taken; the client should retry later."""


class InvalidField(RequestError):
    """A request field refused before any engine work; `field` is text, voice or language."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class StreamPool:
    """The request slots, the validation and the engine hand-off shared by the Wyoming and HTTP servers."""

    def __init__(
        self,
        engine,
        offer: Offer,
        metrics: ServerMetrics,
        *,
        max_concurrent: int,
        max_text_chars: int,
        max_frames: int,
        max_waiting: int = 0,
        text: TextOptions | None = None,
    ):
        self.engine = engine
        self.offer = offer
        self.metrics = metrics
        self.text = text or TextOptions()
        """The appliance's own text options (lexicon, normalisation), shared so SIGHUP reaches both."""
        self.max_concurrent = max_concurrent
        self.max_text_chars = max_text_chars
        self.max_frames = max_frames
        self.streams: set[SpeechStream] = set()
        self.slots = Slots(max_concurrent, max_waiting)
        self._executor = ThreadPoolExecutor(max_concurrent + 1, thread_name_prefix="qwen3tts-net")
        self._ids = itertools.count(1)

    def open(self, server: str, text: object, voice: str | None = None, language: str | None = None,
             instruct: str | None = None, ssml: bool | None = None, *,
             slot: bool = False) -> SpeechStream:  # fmt: skip
        """A stream speaking `text`, its first piece submitted; Busy or RequestError before any audio.

        `ssml` True reads `text` as SSML, None when it starts with `<speak` (the MQTT door's rule);
        `stream.warnings` says which markup was ignored. `slot`: the caller holds one (wait_for_slot).
        """
        try:
            text, warnings = self._checked_text(text, ssml)
        except InvalidField:
            self.metrics.requests.labels(server, "rejected").inc()
            if slot:
                self.slots.release()
            raise
        stream = self.open_stream(server, voice, language, instruct, slot=slot)
        stream.warnings = warnings
        try:
            stream.say(text, ssml)
        except RequestError:  # the engine refused the first piece at submit
            stream.close("rejected")
            raise
        return stream

    def open_stream(self, server: str, voice: str | None = None, language: str | None = None,
                    instruct: str | None = None, *, slot: bool = False) -> SpeechStream:  # fmt: skip
        """A stream whose text comes later, piece by piece (Wyoming's synthesize-start .. -stop)."""
        try:
            voice = self._checked(self.offer.resolve_voice, "voice", voice)
            language = self._checked(self.offer.resolve_language, "language", language)
            if not slot:
                self.slots.take()
        except InvalidField:
            self.metrics.requests.labels(server, "rejected").inc()
            if slot:
                self.slots.release()
            raise
        except NoSlot as exc:
            self.metrics.requests.labels(server, "busy").inc()
            raise Busy(f"busy: {exc}") from None
        instruct = instruct or self.offer.defaults.instruct
        stream = SpeechStream(self, f"{server}-{next(self._ids)}", server, voice, language, instruct)
        self.streams.add(stream)
        self.metrics.active.set(len(self.streams))
        return stream

    async def wait_for_slot(self, server: str, timeout_s: float) -> None:
        """Hold a slot (open with `slot=True`), waiting in the short queue for up to `timeout_s`; Busy
        when the queue is full or the time runs out."""
        try:
            await self.slots.wait(timeout_s)
        except NoSlot as exc:
            self.metrics.requests.labels(server, "busy").inc()
            raise Busy(f"busy: {exc}") from None

    def _checked_text(self, text: object, ssml: bool | None = None) -> tuple[str, tuple[str, ...]]:
        """Checked as an MQTT announcement's text is (synthesis.checked_speech), with the same reasons;
        no chime can be named (the audio goes to the caller, not to a speaker with chimes)."""
        if not isinstance(text, str):
            raise InvalidField("text", "text must be a string")
        try:
            return checked_speech(text, ssml, self.max_text_chars, self.offer.catalog, chimes=())
        except RequestError as exc:
            raise InvalidField("text", str(exc)) from exc

    @staticmethod
    def _checked(resolve, field: str, name: str | None):
        try:
            return resolve(name)
        except RequestError as exc:
            raise InvalidField(field, str(exc)) from exc

    def close_all(self) -> None:
        for stream in list(self.streams):
            stream.close("cancelled")

    def shutdown(self) -> None:
        self.close_all()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _released(self, stream: SpeechStream) -> None:
        self.streams.discard(stream)
        self.slots.release()
        self.metrics.active.set(len(self.streams))


class SpeechStream:
    """One network request: its voice fields, its pieces, the engine handle of the one being synthesised."""

    def __init__(self, pool: StreamPool, stream_id: str, server: str, voice: str | None, language: str,
                 instruct: str | None):  # fmt: skip
        self.pool = pool
        self.id = stream_id
        self.server = server
        self.voice = voice
        self.language = language
        self.instruct = instruct
        self.outcome: str | None = None  # set once, by close()
        self.warnings: tuple[str, ...] = ()  # SSML markup ignored (unknown elements)
        self._pending: list[Piece] = []  # pieces not yet submitted
        self._piece: Piece | None = None  # the piece being synthesised (or its silence played)
        self._handle = None  # its engine Handle; None for a piece that is only silence
        self._num_done = 0  # pieces whose synthesis ended (for the runaway warning's number)
        self.streamed = StreamedText(language)  # Wyoming's streamed text (feed)
        self._num_pieces = 0
        self._num_samples = 0
        self._started = time.perf_counter()
        self._first_audio: float | None = None
        log.info("%s: opened", self.id)

    def say(self, text: str, ssml: bool | None = None) -> None:
        """Queue the pieces of `text`; the first is submitted now if nothing runs (errors raise here)."""
        self._pending += read_pieces(text, self.language, self.pool.text, ssml=ssml, chimes=())[0]
        if self._piece is None:
            self._submit_next()

    def feed(self, chunk: str) -> list[str]:
        """Streamed text in: the sentences it completes (streamed_text.py). Past `max_text_chars` in all the
        stream is closed as rejected and RequestError raised, once."""
        limit = self.pool.max_text_chars
        if self.streamed.chars + len(chunk) > limit:
            self.streamed.chars += len(chunk)
            if self.outcome is None:
                self.close("rejected")
                raise InvalidField("text", f"streamed text too long (> {limit} characters)")
            return []
        return self.streamed.add(chunk)

    def ends_sentence(self) -> bool:
        return self.streamed.ends_sentence()

    def flush(self) -> list[str]:
        return self.streamed.flush()

    def _submit_next(self) -> bool:
        """The next piece becomes the current one, submitted if it has words; False when none is left."""
        self._piece = self._handle = None
        if not self._pending:
            return False
        piece = self._piece = self._pending.pop(0)
        if not speaks(piece):
            return True  # a bare SSML break: its silence only
        request = sentence_request(
            f"{self.id}.{self._num_pieces}",
            piece.normalized,
            language=piece.language or self.language,
            voice=self.pool.offer.catalog.resolve(piece.voice) if piece.voice else self.voice,
            instruct=self.instruct,
            rank=BACKGROUND_RANK,
            max_frames=self.pool.max_frames,
            voices=self.pool.offer.catalog,
        )
        self._handle = self.pool.engine.submit(request)  # raises RequestError on bad input
        self._num_pieces += 1
        return True

    async def pcm(self) -> AsyncIterator[np.ndarray]:
        """PCM chunks of every piece queued so far, as the engine produces them, with each piece's SSML
        silence around it and its speech at its SSML rate.

        Raises RequestError if a piece fails. Being cancelled (client gone) cancels the engine request.
        """
        while self._piece is not None or self._submit_next():
            piece, handle = self._piece, self._handle
            if piece.silence_before_ms:
                yield self._silence(piece.silence_before_ms)
            if handle is not None:
                stretch = TimeStretch(piece.rate, self.pool.offer.sample_rate) if piece.rate != 1.0 else None
                try:
                    async for chunk in self._speech(handle, stretch):
                        yield chunk
                finally:
                    if stretch is not None:
                        stretch.close()
                if handle.cancelled:
                    return  # cancelled from outside (shutdown): no more pieces
                self._num_done += 1
                warning = runaway_warning(handle, self._num_done)
                if warning is not None:  # counted by the engine for /metrics; said to the operator here
                    log.warning("%s: %s", self.id, warning)
            if self._piece is not piece:
                return  # closed meanwhile
            if piece.silence_after_ms:
                yield self._silence(piece.silence_after_ms)
            self._piece = self._handle = None

    async def _speech(self, handle, stretch: TimeStretch | None) -> AsyncIterator[np.ndarray]:
        loop = asyncio.get_running_loop()
        chunks = iter(handle)
        while True:
            try:
                chunk = await loop.run_in_executor(self.pool._executor, next, chunks, None)
            except asyncio.CancelledError:
                handle.cancel()  # the client went away: do not finish the piece
                raise
            if chunk is None:
                break
            chunk = stretch.push(chunk) if stretch is not None else chunk
            if len(chunk):  # a stretcher may hold a chunk back while it gathers a pitch period
                self._count(chunk)
                yield chunk
        tail = stretch.finish() if stretch is not None and not handle.cancelled else ()
        if len(tail):
            self._count(tail)
            yield tail

    def _silence(self, milliseconds: int) -> np.ndarray:
        silence = np.zeros(milliseconds * self.pool.offer.sample_rate // 1000, np.float32)
        self._count(silence)
        return silence

    def _count(self, chunk: np.ndarray) -> None:
        if self._first_audio is None:
            self._first_audio = time.perf_counter()
            waited = self._first_audio - self._started
            self.pool.metrics.time_to_first_audio.labels(self.server).observe(waited)
            log.info("%s: first audio after %.0f ms", self.id, 1000 * waited)
        self._num_samples += chunk.size

    def close(self, outcome: str | None = None) -> None:
        """End the request: cancel engine work still running, free the slot, count the outcome. Idempotent."""
        if self.outcome is not None:
            return
        handle, self._handle, self._pending, self._piece = self._handle, None, [], None
        cancelled = handle is not None and handle.cancel()
        self.outcome = outcome or ("cancelled" if cancelled else "ok")
        metrics = self.pool.metrics
        metrics.requests.labels(self.server, self.outcome).inc()
        audio_s = self._num_samples / self.pool.offer.sample_rate
        if self.outcome == "ok" and audio_s > 0:
            metrics.rtf.labels(self.server).observe((time.perf_counter() - self._started) / audio_s)
        self.pool._released(self)
        log.info("%s: %s (%d pieces, %.2f s audio)", self.id, self.outcome, self._num_pieces, audio_s)
