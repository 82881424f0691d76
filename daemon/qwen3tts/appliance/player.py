"""The player: waiting announcements -> engine requests (sentence by sentence) -> the audio thread.

One thread pops the most urgent announcement when the speaker is free, or at once when an emergency
waits (barge-in: the audio thread cuts the current one within one block and its synthesis is
cancelled). A `priority` announcement takes over at the next sentence boundary instead: the current
announcement's speech source stops before its next sentence. An interrupted announcement is queued
again from the interrupted sentence, or reported cancelled (`announcements.interrupted`).
Playback events from the audio thread are turned into MQTT events here, on this thread.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from qwen3tts.appliance.announcement import Announcement
from qwen3tts.appliance.audio_worker import AudioWorker
from qwen3tts.appliance.intake import announcement_events
from qwen3tts.appliance.messages import PRIORITIES
from qwen3tts.appliance.playback import PlaybackEvent, Utterance
from qwen3tts.appliance.queue import AnnouncementQueue
from qwen3tts.appliance.synthesis import sentence_request, split_text
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Priority, Request
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)

ENGINE_PRIORITY = {"normal": Priority.NORMAL, "priority": Priority.PRIORITY, "emergency": Priority.EMERGENCY}
SAMPLE_RATE = 24000
CHARS_PER_SECOND = 14.0  # rough speaking rate, only for sizing the jitter buffer


@dataclass
class _Speaking:
    """The announcement the audio thread has, and where its speech source is."""

    ann: Announcement
    sentences: list[str]
    index: int = 0  # sentence being synthesised
    cut_at: int | None = None  # sentence boundary where a priority announcement took over
    handle: object | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)


@dataclass
class Voice:
    """Default voice settings, replaced on SIGHUP or by `voice/set`."""

    voice: str | None
    language: str
    instruct: str | None


class Player:
    def __init__(
        self,
        settings: Settings,
        announcements: AnnouncementQueue,
        engine: Engine,
        audio: AudioWorker,
        publish: Callable[[object], object],
        voice: Voice,
        events: queue.Queue[PlaybackEvent],
        heartbeat: Callable[[], None] = lambda: None,
        on_change: Callable[[], None] = lambda: None,
    ):
        self.settings = settings
        self.queue = announcements
        self.engine = engine
        self.audio = audio
        self.publish = publish
        self.voice = voice
        self._heartbeat = heartbeat
        self._on_change = on_change
        self.events = events  # filled by the audio thread (Playback.on_event), drained here
        self._speaking: dict[str, _Speaking] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._accepting = True
        self._thread: threading.Thread | None = None
        self.rtf: float | None = None  # EWMA of synthesis time / audio time

    # ---- lifecycle ----

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="player", daemon=True)
        self._thread.start()

    def stop_accepting(self) -> None:
        """Shutdown: play nothing new; what plays now is finished or cut by the audio worker's stop."""
        self._accepting = False

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._drain_events()

    @property
    def current_id(self) -> str | None:
        return self.audio.current_id

    # ---- commands (any thread) ----

    def stop_current(self) -> bool:
        current = self.audio.current_id
        return current is not None and self.audio.cancel(current, "stopped")

    def stop_all(self) -> list[str]:
        return self.audio.flush("stopped")

    def stop_id(self, ann_id: str) -> bool:
        return self.audio.cancel(ann_id, "stopped")

    # ---- the player thread ----

    def _run(self) -> None:
        while not self._stop.is_set():
            self._heartbeat()
            self._drain_events()
            self._expire_waiting()
            if self._accepting:
                self._start_next()
            self.queue.wait(0.1)
        self._drain_events()

    def _expire_waiting(self) -> None:
        for ann in self.queue.expire():
            self._emit(ann, "expired", "time to live ran out before it could play")

    def _start_next(self) -> None:
        top = self.queue.peek_priority()
        if top is None:
            return
        current = self._current_speaking()
        if current is None:
            if self.audio.queue_depth == 0:
                self._play(self.queue.pop_next(), barge_in=False)
            return
        if _rank(top) <= _rank(current.ann.priority):
            return
        if top == "emergency":
            log.info("emergency barges in on %s", current.ann.id)
            self._play(self.queue.pop_next(), barge_in=True)
        elif current.cut_at is None:
            current.cut_at = current.index + 1  # takes over after the sentence being synthesised

    def _current_speaking(self) -> _Speaking | None:
        current = self.audio.current_id
        with self._lock:
            return self._speaking.get(current) if current else None

    def _play(self, ann: Announcement | None, barge_in: bool) -> None:
        if ann is None:
            return
        sentences = split_text(ann.text, ann.lang or self.voice.language)
        speaking = _Speaking(ann, sentences)
        with self._lock:
            self._speaking[ann.id] = speaking
        utterance = Utterance(
            id=ann.id,
            pcm=self._speech(speaking),
            priority=ann.priority,
            volume=ann.volume,
            chime=ann.chime,
            expected_duration_s=max(1.0, len(ann.text) / CHARS_PER_SECOND),
            rtf=self.rtf,
            cancel_source=lambda: self._cancel_speech(speaking),
        )
        log.info("%s: handing to the speaker (%s, %d sentences)", ann.id, ann.priority, len(sentences))
        self.audio.submit(utterance, barge_in=barge_in)
        self._on_change()

    def _speech(self, speaking: _Speaking) -> Iterator[np.ndarray]:
        """PCM of the announcement, sentence by sentence; stops early at a priority takeover."""
        ann = speaking.ann
        for index, sentence in enumerate(speaking.sentences):
            if speaking.cancelled.is_set() or (speaking.cut_at is not None and index >= speaking.cut_at):
                return
            speaking.index = index
            started = time.perf_counter()
            handle = self.engine.submit(self._request(ann, sentence, index))
            speaking.handle = handle
            produced = 0
            for chunk in handle:  # raises RequestError if synthesis failed
                produced += chunk.size
                yield chunk
            if produced:
                self._measure_rtf(time.perf_counter() - started, produced / SAMPLE_RATE)

    def _request(self, ann: Announcement, sentence: str, index: int) -> Request:
        return sentence_request(
            f"{ann.id}#{ann.plays_done}.{index}",
            sentence,
            language=ann.lang or self.voice.language,
            voice=ann.voice or self.voice.voice,
            instruct=ann.instruct or self.voice.instruct,
            priority=ENGINE_PRIORITY[ann.priority],
            max_frames=self.settings.engine.max_frames,
        )

    def _cancel_speech(self, speaking: _Speaking) -> None:
        speaking.cancelled.set()
        handle = speaking.handle
        if handle is not None:
            handle.cancel()

    def _measure_rtf(self, seconds: float, audio_seconds: float) -> None:
        sample = seconds / audio_seconds
        self.rtf = sample if self.rtf is None else 0.7 * self.rtf + 0.3 * sample

    # ---- playback events -> announcement lifecycle ----

    def _drain_events(self) -> None:
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return
            self._on_playback_event(event)

    def _on_playback_event(self, event: PlaybackEvent) -> None:
        with self._lock:
            speaking = self._speaking.get(event.id)
        if speaking is None:
            return
        ann, now = speaking.ann, time.time()
        if event.kind == "started":
            ann.t_started = now
            self._emit(ann, "started")
        elif event.kind == "first_audio":
            ann.t_first_audio = now
            self._emit(ann, "first_audio")
        elif event.kind == "finished" and speaking.cut_at is not None:
            self._interrupted(speaking, speaking.cut_at, "a priority announcement took over")
        elif event.kind == "finished":
            ann.t_finished = now
            self._forget(ann)
            again = self.queue.done(ann, now)
            self._emit(ann, "finished", "repeats later" if again else "")
        elif event.kind == "cancelled" and event.reason == "barge-in":
            self._interrupted(speaking, speaking.index, "an emergency announcement barged in")
        elif event.kind == "cancelled" and event.reason == "shutdown":
            self._forget(ann)  # stays spooled: it plays again after the restart
        elif event.kind == "cancelled":
            self._forget(ann)
            self.queue.discard(ann)
            self._emit(ann, "cancelled", event.reason or "stopped")
        elif event.kind == "error":
            self._forget(ann)
            self.queue.discard(ann)
            self._emit(ann, "error", event.reason or "playback failed")
        self._on_change()

    def _interrupted(self, speaking: _Speaking, from_sentence: int, why: str) -> None:
        ann = speaking.ann
        self._forget(ann)
        remaining = speaking.sentences[from_sentence:]
        if self.settings.announcements.interrupted == "resume" and remaining:
            resumed = replace(ann, text=" ".join(remaining), t_started=None, t_first_audio=None)
            self.queue.spool.write(resumed)  # a crash now replays what is left, not the whole text
            self.queue.requeue(resumed)
            self._emit(resumed, "queued", f"{why}; resumes from sentence {from_sentence + 1}")
        else:
            self.queue.discard(ann)
            self._emit(ann, "cancelled", why)

    def _forget(self, ann: Announcement) -> None:
        with self._lock:
            self._speaking.pop(ann.id, None)

    def _emit(self, ann: Announcement, event: str, reason: str = "") -> None:
        log.info("%s: %s%s", ann.id, event, f" ({reason})" if reason else "")
        for message in announcement_events(ann, event, reason):
            self.publish(message)


def _rank(priority: str) -> int:
    return PRIORITIES.index(priority)
