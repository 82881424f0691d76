"""Network requests -> the shared engine: the `Gateway` validates a request and opens its stream.

A request's text is validated like an announcement's (length, voice, language) before any engine work;
a refused field is InvalidField, a request with no slot Busy (refusals.py). The gateway holds the slots
(slots.py): at most `max_concurrent_requests` streams exist; one more is refused as Busy, or (Wyoming)
waits in a short queue for one first. Each open request is one `SpeechStream` (speech_stream.py). Both
live on the servers' event loop thread; blocking waits on engine handles run in the gateway's executor
threads.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

from qwen3tts.errors import RequestError
from qwen3tts.servers.metrics import ServerMetrics
from qwen3tts.servers.offer import Offer
from qwen3tts.servers.refusals import Busy, InvalidField
from qwen3tts.servers.slots import NoSlot, Slots
from qwen3tts.servers.speech_stream import SpeechStream
from qwen3tts.synthesis import TextOptions, checked_speech


class Gateway:
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
        self.executor = ThreadPoolExecutor(max_concurrent + 1, thread_name_prefix="qwen3tts-net")
        self._ids = itertools.count(1)

    def open(self, server: str, text: object, voice: str | None = None, language: str | None = None,
             instruct: str | None = None, ssml: bool | None = None, *,
             slot: bool = False, first_chunk_frames: int | None = None) -> SpeechStream:  # fmt: skip
        """A stream speaking `text`, its first piece submitted; Busy or RequestError before any audio.

        `ssml` True reads `text` as SSML, None when it starts with `<speak` (the MQTT door's rule);
        `stream.warnings` says which markup was ignored. `slot`: the caller holds one (wait_for_slot).
        `first_chunk_frames`: what the caller's encoder needs before its first bytes (encoding.py).
        """
        try:
            text, warnings = self._checked_text(text, ssml)
        except InvalidField:
            self.metrics.requests.labels(server, "rejected").inc()
            if slot:
                self.slots.release()
            raise
        stream = self.open_stream(
            server, voice, language, instruct, slot=slot, first_chunk_frames=first_chunk_frames
        )
        stream.warnings = warnings
        try:
            stream.say(text, ssml)
        except RequestError:  # the engine refused the first piece at submit
            stream.close("rejected")
            raise
        return stream

    def open_stream(self, server: str, voice: str | None = None, language: str | None = None,
                    instruct: str | None = None, *, slot: bool = False,
                    first_chunk_frames: int | None = None) -> SpeechStream:  # fmt: skip
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
        stream = SpeechStream(self, f"{server}-{next(self._ids)}", server, voice, language, instruct,
                              first_chunk_frames)  # fmt: skip
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
        self.executor.shutdown(wait=False, cancel_futures=True)

    def released(self, stream: SpeechStream) -> None:
        """A stream ended (SpeechStream.close): forget it and free its slot."""
        self.streams.discard(stream)
        self.slots.release()
        self.metrics.active.set(len(self.streams))
