"""Synthesis ahead of playback: which sentences go to the engine now, and their PCM into buffers.

Called only from the announcer's loop. Sentences are submitted in the order they will play (the
current announcement's, then the next queued announcements'), while the audio that plays before a
sentence is shorter than `announcements.lookahead_s` and fewer requests run than the engine's batch
limit (which the thermal governor sets). The sentence that plays next is always submitted, and an
emergency's sentences ignore both limits (the engine lets emergencies bypass its batch limit too).
PCM is taken from the engine handles without waiting and appended to the announcement's buffer in
sentence order; a later sentence's PCM waits in its handle until the ones before it are complete.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass

from qwen3tts.appliance.announcement import Announcement, AnnouncementStatus, Cut, Sentence
from qwen3tts.appliance.jitter import PcmBuffer, jitter_threshold
from qwen3tts.appliance.phrase_replay import PhraseReplay
from qwen3tts.appliance.registered_voices import RegisteredVoices
from qwen3tts.appliance.sinks import MODEL_RATE
from qwen3tts.appliance.synthesis import TextOptions, sentence_request, split_text
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Priority
from qwen3tts.errors import RequestError
from qwen3tts.settings import Settings
from qwen3tts.text.splitter import weight

log = logging.getLogger(__name__)

ENGINE_PRIORITY = {"normal": Priority.NORMAL, "priority": Priority.PRIORITY, "emergency": Priority.EMERGENCY}
CHARS_PER_SECOND = 14.0  # rough speaking rate, for the look-ahead horizon before a sentence is synthesised
FRAME_S = 0.08  # audio per frame of the 12.5 Hz codec


@dataclass
class Voice:
    """Default voice settings, replaced on SIGHUP or by `voice/set`."""

    voice: str | None
    language: str
    instruct: str | None

    @classmethod
    def from_settings(cls, voice_settings, speakers) -> Voice:
        """The `voice` settings, the voice in the bundle's spelling (a Home Assistant select option)."""
        voice = voice_settings.voice or (next(iter(speakers)) if speakers else None)
        voice = next((s for s in speakers if voice and s.lower() == voice.lower()), voice)
        return cls(voice=voice, language=voice_settings.language, instruct=voice_settings.instruct or None)


class Synthesis:
    """Submits due sentences and moves their PCM; keeps the measured real-time factor."""

    def __init__(
        self,
        engine: Engine,
        voice: Voice,
        settings: Settings,
        text: TextOptions | None = None,
        voices: RegisteredVoices | None = None,
        replay: PhraseReplay | None = None,
    ):
        self.engine = engine
        self.voice = voice
        self.voices = voices or RegisteredVoices()
        """The operator's named voices (replaced in place on SIGHUP)."""
        self.replay = replay
        """Plays whole announcements again from the phrase cache; None synthesises everything."""
        self.settings = settings
        self.text = text or TextOptions(normalize=settings.text.normalize)
        self.rtf: float | None = None
        """EWMA of synthesis time / audio time of one stream, once it produces audio."""
        self.submitting: Announcement | None = None
        """The announcement submit_due() works on (for the supervisor, should it raise)."""
        self._request_ids = itertools.count()

    def start_threshold(self, ann: Announcement, jitter_buffer_ms: int) -> int:
        """Samples to hold back before speech starts so the sentence playing first does not run dry.

        Revised every turn until speech starts: one stream slows down as the batch grows.
        """
        first = ann.sentences[0] if ann.sentences else None
        if first is None or first.done:
            return jitter_threshold(jitter_buffer_ms, None, None)
        return jitter_threshold(jitter_buffer_ms, self.estimate(first), self.stream_rtf())

    def stream_rtf(self) -> float | None:
        """Synthesis time / audio time of one stream now: from the engine's live figures while it runs
        (over its last 2 s, so it errs slow at first), else as last measured."""
        stats = self.engine.stats()
        if stats.frames_per_second > 0 and stats.num_running > 0:
            return stats.num_running / (stats.frames_per_second * FRAME_S)
        return self.rtf

    def estimate(self, sentence: Sentence) -> float:
        """Seconds of audio a sentence gives (measured once it is complete)."""
        if sentence.done:
            return sentence.samples / MODEL_RATE
        return weight(sentence.text) / CHARS_PER_SECOND

    def prepare(self, ann: Announcement, use_cache: bool = False) -> None:
        """The sentences to play (from `cursor`): the text front end's pieces, as the model gets them.

        With `use_cache`, a whole play found in the phrase cache becomes one complete sentence whose
        audio is all in the buffer: it starts playing without synthesis.
        """
        language = ann.lang or self.voice.language
        texts = split_text(ann.text, language, self.text, normalize=ann.normalize)
        ann.cursor = min(ann.cursor, len(texts) - 1)
        ann.sentences = [Sentence(piece) for piece in texts[ann.cursor :]]
        ann.from_cache, ann.rendition = False, None
        if use_cache and self.replay is not None:
            self._replay(ann, texts, language)

    def _replay(self, ann: Announcement, texts: list[str], language: str) -> None:
        voice, instruct = ann.voice or self.voice.voice, ann.instruct or self.voice.instruct
        key = self.replay.key(texts, voice, language, instruct, ann.seed)
        pcm = self.replay.lookup(ann, key)
        if pcm is None:
            self.replay.start_collecting(ann, key)
            return
        ann.sentences = [Sentence(" ".join(texts), samples=len(pcm), done=True)]
        ann.buffer = PcmBuffer()
        ann.buffer.put(pcm)
        ann.buffer.close()
        ann.from_cache = True
        log.info("%s: %.1f s of audio from the phrase cache, no synthesis", ann.id, len(pcm) / MODEL_RATE)

    # ---- submission ----

    def submit_due(self, plan: list[Announcement], rate: int = MODEL_RATE) -> list[Announcement]:
        """Submit what is due in play order; returns the announcements that got a request (or failed)."""
        lookahead = self.settings.announcements.lookahead_s
        max_batch = self.engine.stats().max_batch
        in_flight = sum(1 for ann in plan for s in ann.sentences if s.handle is not None)
        horizon = 0.0  # seconds of audio that play before the sentence being considered
        first = True  # the first sentence not yet complete in the whole plan: it plays next
        touched: list[Announcement] = []
        for ann in plan:
            self.submitting = ann
            if not ann.sentences:
                self.prepare(ann, use_cache=True)
            horizon += ann.buffer.available / rate if ann.buffer is not None else 0.0
            end = len(ann.sentences) if ann.cut_at is None else ann.cut_at
            for sentence in ann.sentences[:end]:
                if sentence.done:
                    continue
                if sentence.handle is not None:
                    horizon += max(0.0, self.estimate(sentence) - sentence.samples / rate)
                    first = False
                    continue
                urgent = first or ann.priority == "emergency"
                if not urgent and (horizon >= lookahead or in_flight >= max_batch):
                    self.submitting = None
                    return touched
                first = False
                try:
                    self._submit(ann, sentence)
                except RequestError as exc:
                    ann.status, ann.error = AnnouncementStatus.FAILED, str(exc)
                    touched.append(ann)
                    break
                in_flight += 1
                horizon += self.estimate(sentence)
                touched.append(ann)
        self.submitting = None
        return touched

    def _submit(self, ann: Announcement, sentence: Sentence) -> None:
        request = sentence_request(
            f"{ann.id}#{next(self._request_ids)}",
            sentence.text,
            language=ann.lang or self.voice.language,
            voice=ann.voice or self.voice.voice,
            instruct=ann.instruct or self.voice.instruct,
            priority=ENGINE_PRIORITY[ann.priority],
            max_frames=self.settings.engine.max_frames,
            voices=self.voices,
            seed=ann.seed,
        )
        sentence.handle = self.engine.submit(request)
        sentence.t_streaming = time.monotonic()
        if ann.buffer is None:
            ann.buffer = PcmBuffer()
        log.debug("%s: submitted %s", ann.id, request.id)

    # ---- PCM ----

    def move_pcm(self, ann: Announcement) -> None:
        """Append the PCM that is ready, in sentence order; close the buffer after the last sentence.

        Raises the RequestError of a sentence whose synthesis failed.
        """
        buffer = ann.buffer
        if buffer is None or buffer.closed:
            return
        end = len(ann.sentences) if ann.cut_at is None else ann.cut_at
        for sentence in ann.sentences[:end]:
            if sentence.done:
                continue
            handle = sentence.handle
            if handle is None:
                return
            try:
                chunks, ended = handle.ready_chunks()
            except RequestError:
                sentence.handle = None
                raise
            for chunk in chunks:
                if sentence.samples == 0:
                    sentence.t_streaming = time.monotonic()  # its first PCM: the speed is measured from here
                buffer.put(chunk)
                sentence.samples += len(chunk)
                if ann.rendition is not None:
                    ann.rendition.append(chunk)
            if not ended:
                return
            sentence.done, sentence.handle = True, None
            self._measure(sentence)
        buffer.close()

    def _measure(self, sentence: Sentence) -> None:
        audio_s = sentence.samples / MODEL_RATE
        if audio_s < 0.5:
            return
        sample = (time.monotonic() - sentence.t_streaming) / audio_s
        self.rtf = sample if self.rtf is None else 0.7 * self.rtf + 0.3 * sample

    # ---- progress and takeover ----

    def sentence_playing(self, ann: Announcement) -> int:
        """Index of the sentence playback is in (the first not yet fully played)."""
        position = ann.buffer.taken if ann.buffer is not None else 0
        end = 0
        for index, sentence in enumerate(ann.sentences):
            end += sentence.samples
            if not sentence.done or end > position:
                return index
        return len(ann.sentences)

    def take_over(self, ann: Announcement) -> None:
        """End `ann` after the sentence it is playing; the rest is cancelled in the engine."""
        cut_at = self.sentence_playing(ann) + 1
        while cut_at < len(ann.sentences):
            before = ann.sentences[:cut_at]
            if not all(s.done for s in before):
                break  # its PCM is not all in yet: move_pcm stops at cut_at and closes the buffer
            if ann.buffer is not None and ann.buffer.cut(sum(s.samples for s in before)):
                break
            cut_at += 1  # playback crossed the boundary meanwhile
        if cut_at >= len(ann.sentences):
            return  # it is on its last sentence: it ends before anything could take over
        ann.cut_at, ann.cut = cut_at, Cut.TAKEOVER
        log.info("%s: a priority announcement takes over after sentence %d", ann.id, ann.cursor + cut_at)
        for sentence in ann.sentences[cut_at:]:
            if sentence.handle is not None:
                sentence.handle.cancel()
                sentence.handle = None
