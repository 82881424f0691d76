"""Network requests -> the shared engine, streamed back as PCM on the servers' event loop.

A network request is validated like an announcement (text length, voice, language), split into
sentences by the same function, and submitted one sentence at a time at Priority.BACKGROUND: below every
announcement, so an emergency preempts it and the speaker never queues behind a network client. Audio
goes back to the caller only. Closing a SpeechStream (client gone, error, shutdown) cancels its engine
request at once. At most `max_concurrent_requests` streams exist; one more is refused as Busy.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from qwen3tts.synthesis import TextOptions, sentence_request, split_text
from qwen3tts.engine.sequence import Priority, SequenceStatus
from qwen3tts.errors import RequestError
from qwen3tts.servers.metrics import ServerMetrics
from qwen3tts.servers.voices import BundleInfo

log = logging.getLogger(__name__)


class Busy(RequestError):
    """Every network request slot is taken; the client should retry later."""


@dataclass(frozen=True)
class SpeechJob:
    """A validated network request."""

    text: str
    voice: str | None
    language: str
    instruct: str | None


class Synthesizer:
    """Validation, request slots and the engine hand-off shared by the Wyoming and HTTP servers.

    Lives on the servers' event loop thread; blocking waits on engine handles run in its own executor.
    """

    def __init__(
        self,
        engine,
        bundle: BundleInfo,
        metrics: ServerMetrics,
        *,
        max_concurrent: int,
        max_text_chars: int,
        max_frames: int,
        text: TextOptions | None = None,
    ):
        self.engine = engine
        self.text = text or TextOptions()
        """The appliance's own text options (lexicon, normalisation), shared so SIGHUP reaches both."""
        self.bundle = bundle
        self.metrics = metrics
        self.max_concurrent = max_concurrent
        self.max_text_chars = max_text_chars
        self.max_frames = max_frames
        self._executor = ThreadPoolExecutor(max_concurrent + 1, thread_name_prefix="qwen3tts-net")
        self._ids = itertools.count(1)
        self.streams: set[SpeechStream] = set()

    def job(self, text: object, voice: str | None, language: str | None, instruct: str | None) -> SpeechJob:
        """A SpeechJob for valid input, else RequestError saying what is wrong."""
        if not isinstance(text, str) or not text.strip():
            raise RequestError("text must be a non-empty string")
        text = text.strip()
        if len(text) > self.max_text_chars:
            raise RequestError(f"text too long ({len(text)} characters > {self.max_text_chars})")
        return SpeechJob(
            text=text,
            voice=self.bundle.resolve_voice(voice),
            language=self.bundle.resolve_language(language),
            instruct=instruct or self.bundle.default_instruct,
        )

    def open(self, job: SpeechJob | None, server: str) -> SpeechStream:
        """Take a slot and (for a job) submit its first sentence; Busy or RequestError before any audio.

        A None job opens an empty stream that `add_text` feeds (Wyoming's streaming text events).
        """
        if len(self.streams) >= self.max_concurrent:
            self.metrics.requests.labels(server, "busy").inc()
            raise Busy(f"busy: {self.max_concurrent} network requests are already synthesising")
        stream = SpeechStream(self, f"{server}-{next(self._ids)}", server)
        self.streams.add(stream)
        self.metrics.active.set(len(self.streams))
        if job is not None:
            try:
                stream.add(job)
            except RequestError:
                stream.close("rejected")
                raise
        return stream

    def close_all(self) -> None:
        for stream in list(self.streams):
            stream.close("cancelled")

    def shutdown(self) -> None:
        self.close_all()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _released(self, stream: SpeechStream) -> None:
        self.streams.discard(stream)
        self.metrics.active.set(len(self.streams))


class SpeechStream:
    """One network request: its sentences, the engine handle of the one being synthesised, its PCM."""

    def __init__(self, synthesizer: Synthesizer, stream_id: str, server: str):
        self.synth = synthesizer
        self.id = stream_id
        self.server = server
        self._pending: list[tuple[SpeechJob, str]] = []  # sentences not yet submitted
        self._handle = None
        self._num_sentences = 0
        self._started = time.perf_counter()
        self._first_audio: float | None = None
        self._num_samples = 0
        self.outcome: str | None = None  # set once, by close()
        log.info("%s: opened", self.id)

    def add(self, job: SpeechJob) -> None:
        """Queue the sentences of `job`; the first is submitted now if nothing runs (errors raise here)."""
        self._pending += [(job, sentence) for sentence in split_text(job.text, job.language, self.synth.text)]
        if self._handle is None:
            self._submit_next()

    def _submit_next(self) -> bool:
        if not self._pending:
            self._handle = None
            return False
        job, sentence = self._pending.pop(0)
        request = sentence_request(
            f"{self.id}.{self._num_sentences}",
            sentence,
            language=job.language,
            voice=job.voice,
            instruct=job.instruct,
            priority=Priority.BACKGROUND,
            max_frames=self.synth.max_frames,
            voices=self.synth.bundle.registered,
        )
        self._handle = self.synth.engine.submit(request)  # raises RequestError on bad input
        self._num_sentences += 1
        return True

    async def pcm(self) -> AsyncIterator[np.ndarray]:
        """PCM chunks of every sentence added so far, as the engine produces them.

        Raises RequestError if a sentence fails. Being cancelled (client gone) cancels the engine request.
        """
        loop = asyncio.get_running_loop()
        while self._handle is not None or self._submit_next():
            handle = self._handle
            chunks = iter(handle)
            while True:
                try:
                    chunk = await loop.run_in_executor(self.synth._executor, next, chunks, None)
                except BaseException:
                    handle.cancel()  # CancelledError: the client went away; do not finish the sentence
                    raise
                if chunk is None:
                    break
                if self._first_audio is None:
                    self._first_audio = time.perf_counter()
                    waited = self._first_audio - self._started
                    self.synth.metrics.time_to_first_audio.labels(self.server).observe(waited)
                    log.info("%s: first audio after %.0f ms", self.id, 1000 * waited)
                self._num_samples += chunk.size
                yield chunk
            self._handle = None
            if handle.status is SequenceStatus.FINISHED_CANCELLED:
                return  # cancelled from outside (shutdown): no more sentences

    def close(self, outcome: str | None = None) -> None:
        """End the request: cancel engine work still running, free the slot, count the outcome. Idempotent."""
        if self.outcome is not None:
            return
        handle, self._handle, self._pending = self._handle, None, []
        cancelled = handle is not None and handle.cancel()
        self.outcome = outcome or ("cancelled" if cancelled else "ok")
        metrics = self.synth.metrics
        metrics.requests.labels(self.server, self.outcome).inc()
        audio_s = self._num_samples / self.synth.bundle.sample_rate
        if self.outcome == "ok" and audio_s > 0:
            metrics.rtf.labels(self.server).observe((time.perf_counter() - self._started) / audio_s)
        self.synth._released(self)
        log.info("%s: %s (%d sentences, %.2f s audio)", self.id, self.outcome, self._num_sentences, audio_s)
