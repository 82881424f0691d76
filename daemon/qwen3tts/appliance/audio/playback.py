"""Playback: one zone's audio thread plays the track it was handed into the zone's sink, and only that.

Each zone has its own Playback, sink and thread. The announcer hands over a `Track` (track.py): the PCM it
keeps filling, how to play it (chime, gain) and a start threshold; the zone reads it through its own
`TrackReader` (track_reader.py), so several zones can play the same track from the same samples. The
audio thread plays chime -> lead-in silence -> speech -> tail silence in fixed
blocks of `block_ms`, checking for a cut before each block, so a barge-in is heard within one block; it
then fades out over `fade_ms` (no click). Speech is brought to the zone's loudness target from the estimate
the track carries with each sample (loudness.py: `ZoneLeveller`, gain then true-peak limiter), and the chimes
were levelled to it once, at start. It keeps no queue and knows no announcement ids: it writes its
progress into the track (started, first audio, underflows, ended) and the announcer turns that into
events. A track ends once its last sample has been heard: after the sink drained and at least the
stream latency after the last write. A failing sink ends that track only, with its error.
Its heartbeat is progress: every block written, and every wait for PCM that is on its way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from qwen3tts.appliance.audio.loudness import LoudnessTarget, ZoneLeveller
from qwen3tts.appliance.audio.sinks import MODEL_RATE, Sink
from qwen3tts.appliance.audio.track import DEFAULT_ZONE, Samples, Track
from qwen3tts.appliance.audio.track_reader import TrackReader
from qwen3tts.appliance.systemd.supervisor import isolated
from qwen3tts.errors import AudioError

if TYPE_CHECKING:
    from qwen3tts.appliance.audio.chimes import ChimeSet
    from qwen3tts.appliance.audio.ducking_hook import Ducking
    from qwen3tts.settings import AudioSettings

log = logging.getLogger(__name__)


class _Cut(Exception):
    pass


def fade_in(n: int) -> np.ndarray:
    """Linear gain ramp 0, 1/n, ..., (n-1)/n."""
    return np.arange(n, dtype=np.float32) / np.float32(max(n, 1))


def fade_out(n: int) -> np.ndarray:
    """Linear gain ramp (n-1)/n, ..., 1/n, 0: the last sample is silent."""
    return fade_in(n)[::-1]


class Playback:
    """The audio worker: `run()` plays whatever track `play_next()` handed over, one at a time."""

    def __init__(
        self,
        sink: Sink,
        settings: AudioSettings,
        chimes: ChimeSet,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        heartbeat: Callable[[], None] = lambda: None,
        on_end: Callable[[], None] = lambda: None,
        idle_tick_s: float = 0.25,
        zone: str = DEFAULT_ZONE,
        ducking: Ducking | None = None,
        loudness: LoudnessTarget | None = None,
    ):
        self.zone = zone
        """The zone this playback is the audio thread of: the reader it plays each track through."""
        self.sink = sink
        self.ducking = ducking
        """What this zone lowers while a track plays (zones/ducking/zone_ducking.py); None lowers nothing."""
        self.loudness = loudness
        """This zone's loudness target (None: played at the level the track and the chimes have)."""
        self.chimes = chimes.levelled(loudness)
        self.underflows = 0
        """Underflows since start, for the status message."""
        self._clock = clock
        self._sleep = sleep
        self._monotonic = monotonic
        self._beat = heartbeat
        self._on_end = on_end
        self._idle_tick_s = idle_tick_s
        self._block = settings.block_ms * MODEL_RATE // 1000
        self._fade = settings.fade_ms * MODEL_RATE // 1000
        self._lead_in = settings.lead_in_ms * MODEL_RATE // 1000
        self._tail = settings.tail_ms * MODEL_RATE // 1000
        self._cond = threading.Condition()
        self._next: Track | None = None

    # ---- the announcer's side ----

    def play_next(self, track: Track) -> None:
        """Hand over the track to play as soon as the current one has ended."""
        with self._cond:
            self._next = track
            self._cond.notify_all()

    # ---- the audio thread ----

    def run(self, stop: threading.Event) -> None:
        """The audio worker's loop, until `stop` is set; tries to bring back a lost sink while idle."""
        while not stop.is_set():
            self._beat()
            with self._cond:
                if self._next is None:
                    self._cond.wait(self._idle_tick_s)
                track, self._next = self._next, None
            if track is None:
                self.sink.recover()
                if self.ducking is not None:  # no track came within the tick: raise the held duck;
                    self.ducking.recover()  # also what a crash of ours left lowered
                continue
            self.play(track, hold_duck=self.ducking is not None)
            self._on_end()
        if self.ducking is not None:
            self.ducking.recover()  # stopping: nothing stays lowered

    def play(self, whole: Track, hold_duck: bool = False) -> None:
        """Play one track to its end or cut in this zone; its progress says what happened. A failure of the
        sink (or of anything else here) ends this track only, with its error: the next one plays.
        `hold_duck` (the audio loop): the zone stays ducked for a track the announcer may hand over within
        the idle tick (a barge-in, the next of a queue); the loop raises it when none comes."""
        track = TrackReader(whole, self.zone)
        track.started(self._clock())
        try:
            if self.ducking is not None:
                self.ducking.duck(track.label)  # returns after the ramp in: the chime starts on lowered audio
            self._play_and_drain(track)
        finally:  # also after a cut, a failed output or an exception: nothing stays lowered
            if self.ducking is not None:
                self.ducking.unduck(track.label, hold=hold_duck or self._next is not None)

    def _play_and_drain(self, track: TrackReader) -> None:
        played_out = False
        with isolated(f"playing {track.label}", lambda exc: track.failed(f"{type(exc).__name__}: {exc}")):
            played_out = self._play_to_sink(track)
        t_heard = self._clock()
        with isolated(f"ending {track.label}", lambda exc: track.failed(f"{type(exc).__name__}: {exc}")):
            t_heard = self._drain(track, played_out)
        track.finished(t_heard, played_out)

    def _play_to_sink(self, track: TrackReader) -> bool:
        """True when the track played out to its end; False when it was cut or the output failed."""
        try:
            self.sink.begin(track.label)
            self._play_track(track, track.how.gain)
            return True
        except _Cut:
            return False
        except AudioError as exc:  # the output failed (device lost, file unwritable): this track ends
            track.failed(f"{type(exc).__name__}: {exc}")
            log.warning("%s: audio output of zone %s failed: %s", track.label, self.zone, exc)
            return False

    def _play_track(self, track: TrackReader, gain: float) -> None:
        chime = self.chimes.for_announcement(track.how.priority, track.how.chime)
        if chime is not None:
            self._play_samples(track, chime * np.float32(gain))
        self._play_samples(track, np.zeros(self._lead_in, dtype=np.float32))
        self._play_speech(track, gain)
        self._play_samples(track, np.zeros(self._tail, dtype=np.float32))

    def _play_samples(self, track: TrackReader, samples: np.ndarray) -> None:
        """A fixed array (chime, silence), block by block."""
        pos = 0
        while pos < len(samples):
            if track.is_cut:
                self._fade_out_and_stop(track, samples[pos : pos + self._fade])
            block = samples[pos : pos + self._block]
            self._write(track, block)
            pos += len(block)

    def _play_speech(self, track: TrackReader, gain: float) -> None:
        least = self._block + self._fade  # take() holds back a fade's worth while the source runs
        self._wait_until_buffered(track, least, start=True)
        if track.is_cut:
            raise _Cut  # cut before any speech: nothing to fade
        since_fade_in = 0  # samples written since speech (re)started; the fade-in covers the first `fade`
        leveller = ZoneLeveller(self.loudness)  # this play in this zone: its gain and limiter
        while True:
            if track.is_cut:
                tail = self._shape(leveller, track.take_now_levelled(self._fade), since_fade_in, gain, True)
                self._fade_out_and_stop(track, tail)
            block, last = track.take_levelled(self._block, reserve=self._fade)
            if block is None and not self.sink.paced:  # a file does not care when samples arrive
                self._wait_until_buffered(track, least)
                continue
            if block is None:  # synthesis fell behind a sound card: fade out what is held back, rebuffer
                self._underflow(track)
                tail = self._shape(leveller, track.take_now_levelled(self._fade), since_fade_in, gain, True)
                self._write(track, tail * fade_out(len(tail)))
                since_fade_in = 0
                self._wait_until_buffered(track, least, start=True)
                continue
            wanted = track.how.gain  # changed while it plays (Track.set_gain): ramped over this block
            shaped = self._shape(leveller, block, since_fade_in, gain, last, wanted)
            gain = wanted
            if last and self._fade:
                shaped[-self._fade :] *= fade_out(min(self._fade, len(shaped)))
            if len(shaped):
                self._write(track, shaped)
                track.first_audio(self._clock())
            since_fade_in += len(block.pcm)
            if last:
                return

    def _shape(self, leveller: ZoneLeveller, block: Samples, since_fade_in: int, gain: float,
               ends: bool, to_gain: float | None = None) -> np.ndarray:  # fmt: skip
        """The fade-in ramp where the block overlaps the first `fade` samples of speech, the zone's
        loudness (with `ends`, also what its limiter held back: silence or a fade-out follows), the gain
        (a ramp from `gain` to `to_gain` over the block when it changed: no click)."""
        out = block.pcm.copy()
        ramp_left = self._fade - since_fade_in
        if ramp_left > 0:
            n = min(ramp_left, len(out))
            out[:n] *= fade_in(self._fade)[since_fade_in : since_fade_in + n]
        out = leveller.process(out, block.levels)
        if ends:
            out = np.concatenate([out, leveller.flush()])
        if to_gain is None or to_gain == gain:
            return out * np.float32(gain)
        return out * np.linspace(gain, to_gain, len(out), dtype=np.float32)

    def _wait_until_buffered(self, track: TrackReader, least: int, start: bool = False) -> None:
        """Hold speech back until `least` samples (with `start`: also the track's start threshold, which
        the announcer may revise meanwhile) are buffered; a sound card gets silence meanwhile.

        Returns early on a cut: the caller fades out what it holds back.
        """
        while not track.is_cut:
            threshold = max(track.start_threshold, least) if start else least
            if track.ready(threshold):
                return
            if self.sink.paced:
                self._write(track, np.zeros(self._block, dtype=np.float32))
            else:
                self._beat()  # waiting for PCM that is on its way is progress too
                track.wait(threshold, timeout=self._block / MODEL_RATE)

    def _fade_out_and_stop(self, track: TrackReader, samples: np.ndarray) -> None:
        if len(samples):
            self._write(track, samples * fade_out(len(samples)))
        raise _Cut

    def _write(self, track: TrackReader, block: np.ndarray) -> None:
        if self.sink.write(block):
            self._underflow(track)
        self._beat()

    def _underflow(self, track: TrackReader) -> None:
        track.underflowed()
        self.underflows += 1
        log.debug("underflow in %s (%d so far)", track.label, track.play.underflows)

    def _drain(self, track: TrackReader, played_out: bool) -> float:
        """Wait until the last written sample has been heard; returns that time.

        The wait is measured on the monotonic clock: a step of the wall clock (NTP at boot) between the
        last write and here must not make the audio thread sleep for an hour."""
        t_last_write, m_last_write = self._clock(), self._monotonic()
        latency = self.sink.latency()
        try:
            self.sink.end(complete=played_out or track.keep_partial)
        except AudioError as exc:  # the track is over either way; it ends with the error
            track.failed(f"{type(exc).__name__}: {exc}")
            log.warning("%s: audio output of zone %s failed at the end: %s", track.label, self.zone, exc)
        remaining = m_last_write + latency - self._monotonic()
        if remaining > 0:
            self._sleep(remaining)
        return max(self._clock(), t_last_write + latency)
