"""One network request from open to close, streamed back as PCM on the servers' event loop.

A `SpeechStream` holds the request's validated voice, language and instruct (the gateway checked them,
gateway.py), the pieces of text not yet submitted, the engine handle of the piece being synthesised,
and its figures. Text is split by the same function as an announcement's and submitted one piece at a
time at BACKGROUND_RANK: below every announcement, so an emergency preempts it and the speaker never
queues behind a network client. Audio goes back to the caller only. Closing a stream (client gone,
error, shutdown) cancels its engine request at once and gives its slot back to the gateway.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from concurrent.futures import Executor
from typing import Any, Protocol

import numpy as np

from qwen3tts.engine.runaway import runaway_warning
from qwen3tts.servers.metrics import ServerMetrics
from qwen3tts.servers.offer import Offer
from qwen3tts.servers.refusals import InvalidField
from qwen3tts.servers.streamed_text import StreamedText
from qwen3tts.synthesis import BACKGROUND_RANK, TextOptions, read_pieces, sentence_request, speaks
from qwen3tts.tempo import TimeStretch
from qwen3tts.text import Piece

log = logging.getLogger(__name__)


class GatewayView(Protocol):
    """What a stream uses of the gateway that opened it (gateway.py)."""

    engine: Any
    offer: Offer
    metrics: ServerMetrics
    text: TextOptions
    max_text_chars: int
    max_frames: int
    executor: Executor
    """Where the blocking waits on engine handles run, off the event loop."""

    def released(self, stream: SpeechStream) -> None:
        """The stream ended: its slot is free again."""


class SpeechStream:
    """One network request: its voice fields, its pieces, the engine handle of the one being synthesised."""

    def __init__(self, gateway: GatewayView, stream_id: str, server: str, voice: str | None, language: str,
                 instruct: str | None, first_chunk_frames: int | None = None):  # fmt: skip
        self.gateway = gateway
        self.first_chunk_frames = first_chunk_frames  # what the caller's encoder needs first (encoding.py)
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
        self._pending += read_pieces(text, self.language, self.gateway.text, ssml=ssml, chimes=())[0]
        if self._piece is None:
            self._submit_next()

    def feed(self, chunk: str) -> list[str]:
        """Streamed text in: the sentences it completes (streamed_text.py). Past `max_text_chars` in all the
        stream is closed as rejected and RequestError raised, once."""
        limit = self.gateway.max_text_chars
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
            voice=self.gateway.offer.catalog.resolve(piece.voice) if piece.voice else self.voice,
            instruct=self.instruct,
            rank=BACKGROUND_RANK,
            max_frames=self.gateway.max_frames,
            voices=self.gateway.offer.catalog,
            first_chunk_frames=self.first_chunk_frames,
        )
        self._handle = self.gateway.engine.submit(request)  # raises RequestError on bad input
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
                stretch = (
                    TimeStretch(piece.rate, self.gateway.offer.sample_rate) if piece.rate != 1.0 else None
                )
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
                chunk = await loop.run_in_executor(self.gateway.executor, next, chunks, None)
            except asyncio.CancelledError:
                handle.cancel()  # the client went away: do not finish the piece
                raise
            if chunk is None or self.outcome is not None:  # closed meanwhile (shutdown): nothing more
                break
            chunk = stretch.push(chunk) if stretch is not None else chunk
            if len(chunk):  # a stretcher may hold a chunk back while it gathers a pitch period
                self._count(chunk)
                yield chunk
        ended = handle.cancelled or self.outcome is not None
        tail = stretch.finish() if stretch is not None and not ended else ()
        if len(tail):
            self._count(tail)
            yield tail

    def _silence(self, milliseconds: int) -> np.ndarray:
        silence = np.zeros(milliseconds * self.gateway.offer.sample_rate // 1000, np.float32)
        self._count(silence)
        return silence

    def _count(self, chunk: np.ndarray) -> None:
        if self._first_audio is None:
            self._first_audio = time.perf_counter()
            waited = self._first_audio - self._started
            self.gateway.metrics.time_to_first_audio.labels(self.server).observe(waited)
            log.info("%s: first audio after %.0f ms", self.id, 1000 * waited)
        self._num_samples += chunk.size

    def close(self, outcome: str | None = None) -> None:
        """End the request: cancel engine work still running, free the slot, count the outcome. Idempotent."""
        if self.outcome is not None:
            return
        handle, self._handle, self._pending, self._piece = self._handle, None, [], None
        cancelled = handle is not None and handle.cancel()
        self.outcome = outcome or ("cancelled" if cancelled else "ok")
        metrics = self.gateway.metrics
        metrics.requests.labels(self.server, self.outcome).inc()
        audio_s = self._num_samples / self.gateway.offer.sample_rate
        if self.outcome == "ok" and audio_s > 0:
            metrics.rtf.labels(self.server).observe((time.perf_counter() - self._started) / audio_s)
        self.gateway.released(self)
        log.info("%s: %s (%d pieces, %.2f s audio)", self.id, self.outcome, self._num_pieces, audio_s)
