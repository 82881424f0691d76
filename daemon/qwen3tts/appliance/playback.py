"""Playing one announcement: chime -> lead-in silence -> jitter buffer -> speech -> tail silence.

`Playback.play()` runs on the audio thread and blocks until the announcement has been heard (or
was cut off). It writes fixed blocks of `block_ms` to the sink and checks for an interrupt before
each block, so a barge-in is noticed within one block; it then fades out over `fade_ms` (no click),
drops everything still buffered and stops the source (`Utterance.cancel_source`, e.g. the engine
handle's cancel). Speech fades in and out over `fade_ms` too, at the start, at the end and around
an underrun. `finished` is sent when the last sample has been played: after the sink drained and
at least the stream latency after the last write.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from qwen3tts.appliance.jitter import PcmBuffer, jitter_threshold, start_feeder
from qwen3tts.appliance.sinks import MODEL_RATE, Sink

if TYPE_CHECKING:
    from qwen3tts.appliance.chimes import ChimeSet
    from qwen3tts.settings import AudioSettings

log = logging.getLogger(__name__)

EventKind = Literal["started", "first_audio", "finished", "cancelled", "error"]


@dataclass
class Utterance:
    """One announcement to play, as the audio thread sees it."""

    id: str
    pcm: Iterable[np.ndarray]
    """24 kHz float32 mono chunks as synthesis produces them (an engine Handle)."""
    priority: str = "normal"
    volume: float | None = None
    """This announcement's gain 0..1; None means 1.0. Multiplied by the master volume (not for emergency)."""
    chime: str | None = None
    """None/'default' = the priority's chime, 'none' = no chime, or a priority name to borrow its chime."""
    expected_duration_s: float | None = None
    """Predicted speech length, for sizing the jitter buffer; None if unknown."""
    rtf: float | None = None
    """Measured real-time factor (synthesis time / audio time) of this machine; None if unknown."""
    cancel_source: Callable[[], object] | None = None
    """Called once when the announcement is interrupted, so synthesis stops too."""


@dataclass(frozen=True)
class PlaybackEvent:
    kind: EventKind
    id: str
    t: float
    """Clock time of the event (time.monotonic() unless a clock was injected)."""
    reason: str | None = None
    """cancelled: the interrupt reason; error: '<ExceptionClass>: message'."""
    underflows: int = 0
    """Underflows during this announcement so far."""


class _Interrupted(Exception):
    pass


class _Run:
    """The announcement playing now; `interrupted` may be set from any thread."""

    def __init__(self, utt: Utterance):
        self.utt = utt
        self.interrupted = threading.Event()
        self.reason = "stopped"
        self.underflows = 0
        self.first_audio_sent = False
        self.speech_done = False


def fade_in(n: int) -> np.ndarray:
    """Linear gain ramp 0, 1/n, ..., (n-1)/n."""
    return np.arange(n, dtype=np.float32) / np.float32(max(n, 1))


def fade_out(n: int) -> np.ndarray:
    """Linear gain ramp (n-1)/n, ..., 1/n, 0: the last sample is silent."""
    return fade_in(n)[::-1]


class Playback:
    """Plays `Utterance`s one at a time into a sink; see the module docstring."""

    def __init__(
        self,
        sink: Sink,
        settings: AudioSettings,
        chimes: ChimeSet,
        on_event: Callable[[PlaybackEvent], None] = lambda event: None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.sink = sink
        self.chimes = chimes
        self.volume = settings.volume
        """Master volume 0..1 (MQTT volume/set changes it); takes effect at the next announcement."""
        self.muted = settings.muted
        self.underflows = 0
        """Underflows since start, for the status message."""
        self._on_event = on_event
        self._clock = clock
        self._sleep = sleep
        self._block = settings.block_ms * MODEL_RATE // 1000
        self._fade = settings.fade_ms * MODEL_RATE // 1000
        self._lead_in = settings.lead_in_ms * MODEL_RATE // 1000
        self._tail = settings.tail_ms * MODEL_RATE // 1000
        self._jitter_ms = settings.jitter_buffer_ms
        self._lock = threading.Lock()
        self._run: _Run | None = None

    @property
    def current_id(self) -> str | None:
        run = self._run
        return run.utt.id if run is not None else None

    def gain_for(self, utt: Utterance) -> float:
        """Emergency plays at its own volume (full scale by default), ignoring master volume and mute."""
        own = 1.0 if utt.volume is None else utt.volume
        if utt.priority == "emergency":
            return own
        return 0.0 if self.muted else own * self.volume

    def interrupt(self, item_id: str | None = None, reason: str = "stopped") -> bool:
        """Cut the playing announcement (only if it is `item_id`, when given); thread-safe.

        The audio thread fades out within one block and drops the rest; the source is cancelled here,
        at once, so synthesis and playback stop together. False when nothing matching was playing.
        """
        with self._lock:
            run = self._run
            if run is None or run.interrupted.is_set() or item_id not in (None, run.utt.id):
                return False
            run.reason = reason
            run.interrupted.set()
        if run.utt.cancel_source is not None:
            run.utt.cancel_source()
        return True

    def reserve(self, utt: Utterance) -> None:
        """Make `utt` the current announcement ahead of play(), so an interrupt in between is not lost."""
        with self._lock:
            self._run = _Run(utt)

    def discard(self, utt: Utterance, reason: str) -> PlaybackEvent:
        """Report an announcement that will never play as cancelled, and stop its synthesis."""
        if utt.cancel_source is not None:
            utt.cancel_source()
        return self._emit(_Run(utt), "cancelled", self._clock(), reason)

    def play(self, utt: Utterance) -> PlaybackEvent:
        """Play one announcement to the end (or interrupt); returns its final event, also sent to on_event."""
        with self._lock:
            if self._run is None or self._run.utt is not utt:
                self._run = _Run(utt)
            run = self._run
        buffer = PcmBuffer()
        start_feeder(utt.pcm, buffer, utt.id)
        self._emit(run, "started", self._clock())
        kind: EventKind = "finished"
        reason = None
        try:
            self.sink.begin(utt.id)
            self._play_announcement(run, buffer, self.gain_for(utt))
        except _Interrupted:
            kind, reason = ("finished", None) if run.speech_done else ("cancelled", run.reason)
        except Exception as exc:  # a sink or source failure ends this announcement only
            kind, reason = "error", f"{type(exc).__name__}: {exc}"
            log.warning("announcement %s failed in playback: %s", utt.id, reason)
            if utt.cancel_source is not None:
                utt.cancel_source()
        finally:
            buffer.abandon()
            with self._lock:
                self._run = None
        t_end, drain_error = self._drain(complete=kind != "cancelled")
        if drain_error is not None and kind == "finished":
            kind, reason = "error", drain_error
        return self._emit(run, kind, t_end, reason)

    def _play_announcement(self, run: _Run, buffer: PcmBuffer, gain: float) -> None:
        chime = self.chimes.for_announcement(run.utt.priority, run.utt.chime)
        if chime is not None:
            self._play_samples(run, chime * np.float32(gain))
        self._play_samples(run, np.zeros(self._lead_in, dtype=np.float32))
        self._play_speech(run, buffer, gain)
        if buffer.error is not None:
            raise buffer.error
        run.speech_done = True
        self._play_samples(run, np.zeros(self._tail, dtype=np.float32))

    def _play_samples(self, run: _Run, samples: np.ndarray) -> None:
        """A fixed array (chime, silence), block by block."""
        pos = 0
        while pos < len(samples):
            if run.interrupted.is_set():
                self._fade_out_and_stop(run, samples[pos : pos + self._fade])
            block = samples[pos : pos + self._block]
            self._write(run, block)
            pos += len(block)

    def _play_speech(self, run: _Run, buffer: PcmBuffer, gain: float) -> None:
        least = self._block + self._fade  # take() holds back a fade's worth while the source runs
        start = jitter_threshold(self._jitter_ms, run.utt.expected_duration_s, run.utt.rtf)
        rebuffer = jitter_threshold(self._jitter_ms, None, None)
        self._wait_until_buffered(run, buffer, max(start, least))
        since_fade_in = 0  # samples written since speech (re)started; the fade-in covers the first `fade`
        while True:
            if run.interrupted.is_set():
                tail = self._shape(buffer.take_now(self._fade), since_fade_in, gain)
                self._fade_out_and_stop(run, tail)
            block, last = buffer.take(self._block, reserve=self._fade)
            if block is None and not self.sink.paced:  # a file does not care when samples arrive
                self._wait_until_buffered(run, buffer, least)
                continue
            if block is None:  # synthesis fell behind a sound card: fade out what is held back, rebuffer
                self._underflow(run)
                tail = self._shape(buffer.take_now(self._fade), since_fade_in, gain)
                self._write(run, tail * fade_out(len(tail)))
                since_fade_in = 0
                self._wait_until_buffered(run, buffer, max(rebuffer, least))
                continue
            shaped = self._shape(block, since_fade_in, gain)
            if last and self._fade:
                shaped[-self._fade :] *= fade_out(min(self._fade, len(shaped)))
            if len(shaped):
                self._write(run, shaped)
                if not run.first_audio_sent:
                    run.first_audio_sent = True
                    self._emit(run, "first_audio", self._clock())
            since_fade_in += len(shaped)
            if last:
                return

    def _shape(self, block: np.ndarray, since_fade_in: int, gain: float) -> np.ndarray:
        """Gain, plus the fade-in ramp where the block overlaps the first `fade` samples of speech."""
        out = block * np.float32(gain)
        ramp_left = self._fade - since_fade_in
        if ramp_left > 0:
            n = min(ramp_left, len(out))
            out[:n] *= fade_in(self._fade)[since_fade_in : since_fade_in + n]
        return out

    def _wait_until_buffered(self, run: _Run, buffer: PcmBuffer, threshold: int) -> None:
        """Hold speech back until `threshold` samples are buffered; a sound card gets silence meanwhile."""
        while not buffer.ready(threshold):
            if run.interrupted.is_set():
                self._fade_out_and_stop(run, np.zeros(0, dtype=np.float32))
            if self.sink.paced:
                self._write(run, np.zeros(self._block, dtype=np.float32))
            else:
                buffer.wait(threshold, timeout=self._block / MODEL_RATE)

    def _fade_out_and_stop(self, run: _Run, samples: np.ndarray) -> None:
        if len(samples):
            self._write(run, samples * fade_out(len(samples)))
        raise _Interrupted

    def _write(self, run: _Run, block: np.ndarray) -> None:
        if self.sink.write(block):
            self._underflow(run)

    def _underflow(self, run: _Run) -> None:
        run.underflows += 1
        self.underflows += 1
        log.debug("underflow in %s (%d so far)", run.utt.id, run.underflows)

    def _drain(self, complete: bool) -> tuple[float, str | None]:
        """Wait until the last written sample has been heard; (that time, error text or None)."""
        t_last_write = self._clock()
        latency = self.sink.latency()
        error = None
        try:
            self.sink.end(complete)
        except Exception as exc:  # the announcement is over either way; report, do not raise
            error = f"{type(exc).__name__}: {exc}"
            log.warning("audio sink failed at the end of an announcement: %s", error)
        t_played = t_last_write + latency
        remaining = t_played - self._clock()
        if remaining > 0:
            self._sleep(remaining)
        return max(self._clock(), t_played), error

    def _emit(self, run: _Run, kind: EventKind, t: float, reason: str | None = None) -> PlaybackEvent:
        event = PlaybackEvent(kind, run.utt.id, t, reason, run.underflows)
        try:
            self._on_event(event)
        except Exception:  # a broken listener must not stop the audio thread
            log.exception("playback event listener failed on %s", event)
        return event
