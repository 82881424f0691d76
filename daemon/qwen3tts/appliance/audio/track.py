"""The track: one play's audio on its way from the announcer to the sinks, and the only thing the
announcer and the audio threads share.

The announcer (one thread) puts 24 kHz float32 PCM in as synthesis produces it, sets how the track is played
(chime, gain, start threshold), names the zones that play it (`attach`) and may cut it; the audio thread of
each of those zones takes fixed-size blocks out through its own `TrackReader` and writes how far it got
(started, first audio, underflows, ended, error). One play is synthesised once and heard in every zone from
the same samples (with one loudness estimate per sample, loudness.py, that each zone turns into its own
gain): a sample stays in the track until every zone's reader took it. Every field both sides touch
sits behind the track's one condition, so each read is consistent without another lock anywhere. Nothing
else passes between the threads.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from qwen3tts.appliance.audio.loudness import StreamLoudness
from qwen3tts.appliance.priority import Priority

DEFAULT_ZONE = "default"
"""The zone of a box that configures none: its `audio` section."""


@dataclass(frozen=True)
class HowToPlay:
    """Set by the announcer when the track becomes one that plays."""

    priority: Priority = Priority.NORMAL
    chime: str | None = None
    """None/'default' = the priority's chime, 'none' = no chime, or a priority name to borrow its chime."""
    gain: float = 1.0
    """Linear gain of chime and speech (the master volume and the announcement's own, already combined);
    `Track.set_gain` may change it while the track plays."""


@dataclass(frozen=True)
class ZonePlay:
    """How far one zone got with the track (a copy: `Track.zones()` hands these out)."""

    taken: int = 0
    t_started: float | None = None
    t_first_audio: float | None = None
    t_ended: float | None = None
    """Clock time its last sample was heard (or its cut faded out); None while it plays."""
    played_out: bool = False
    """Ended after its tail, not cut and not failed."""
    error: str | None = None
    """'<ExceptionClass>: message' when this zone's output failed."""
    underflows: int = 0


class Samples(NamedTuple):
    """A zone's take: the samples and each one's loudness estimate (LUFS, NaN where none yet)."""

    pcm: np.ndarray
    levels: np.ndarray


class Track:
    """Samples with an end marker, read by one reader per zone; playing instructions and per-zone progress."""

    def __init__(self, label: str) -> None:
        self.label = label
        """Names the output (the WAV sink's file name); playback gives it no other meaning."""
        self.how = HowToPlay()
        self._cond = threading.Condition()
        self._chunks: deque[tuple[int, np.ndarray, np.ndarray]] = deque()
        """(absolute index of its first sample, samples, the loudness estimate of each sample in LUFS)"""
        self._loudness = StreamLoudness()  # the announcer's thread only (put)
        self._received = 0
        self._closed = False
        self._abandoned = False
        self._start_threshold = 0
        self._cut = False
        self._keep_partial = True
        self._zones: dict[str, ZonePlay] = {}

    def __repr__(self) -> str:
        zones = list(self._zones)
        return f"Track({self.label!r}, received={self._received}, zones={zones}, closed={self._closed})"

    # ---- the announcer's side ----

    def attach(self, zones: tuple[str, ...] | list[str]) -> None:
        """The zones that play this track (before it is handed to their audio threads)."""
        with self._cond:
            for zone in zones:
                self._zones.setdefault(zone, ZonePlay())

    def put(self, chunk: np.ndarray) -> None:
        chunk = np.ascontiguousarray(chunk, dtype=np.float32).reshape(-1)
        if len(chunk) == 0 or self.closed:
            return
        levels = self._loudness.feed(chunk)  # outside the lock: the audio threads need not wait for it
        with self._cond:
            if self._abandoned or self._closed:
                return
            self._chunks.append((self._received, chunk, levels))
            self._received += len(chunk)
            self._cond.notify_all()

    def close(self) -> None:
        """Nothing more will come: what is buffered plays to the end."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def abandon(self) -> None:
        """Drop everything buffered and refuse more (the announcement no longer plays this track)."""
        with self._cond:
            self._abandoned = self._closed = True
            self._chunks.clear()
            self._cond.notify_all()

    def end_at(self, at: int) -> bool:
        """End the stream at absolute sample `at` (a sentence boundary) in every zone: later samples are
        dropped and nothing more is accepted. False when a zone's playback has already gone past `at`."""
        with self._cond:
            if any(play.taken > at for play in self._zones.values()):
                return False
            while self._chunks and self._chunks[-1][0] >= at:
                self._chunks.pop()
            if self._chunks and self._chunks[-1][0] + len(self._chunks[-1][1]) > at:
                start, samples, levels = self._chunks.pop()
                self._chunks.append((start, samples[: at - start], levels[: at - start]))
            self._received = min(self._received, at)
            self._closed = True
            self._cond.notify_all()
            return True

    def set_gain(self, gain: float) -> None:
        """A new gain while it plays (a renderer's volume): each zone ramps to it over its next block."""
        with self._cond:
            self.how = replace(self.how, gain=gain)

    def set_start_threshold(self, samples: int) -> None:
        """Samples to hold back before speech starts (revised until it starts; see jitter_threshold())."""
        with self._cond:
            self._start_threshold = samples
            self._cond.notify_all()

    def cut(self, keep_partial: bool = True) -> None:
        """Fade out within one block and end, in every zone; `keep_partial=False` drops a recording of it."""
        with self._cond:
            self._cut, self._keep_partial = True, keep_partial
            self._cond.notify_all()

    # ---- what the announcer reads ----

    def zones(self) -> dict[str, ZonePlay]:
        """Each zone's progress, all read at one instant."""
        with self._cond:
            return dict(self._zones)

    @property
    def available(self) -> int:
        """Samples buffered that the slowest zone has not taken yet."""
        with self._cond:
            return 0 if self._abandoned else self._received - self._slowest()

    @property
    def received(self) -> int:
        with self._cond:
            return self._received

    @property
    def taken(self) -> int:
        """The playback position of the zone that is furthest behind (0 before any zone plays)."""
        with self._cond:
            return self._slowest()

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    @property
    def is_cut(self) -> bool:
        with self._cond:
            return self._cut

    @property
    def start_threshold(self) -> int:
        with self._cond:
            return self._start_threshold

    @property
    def t_started(self) -> float | None:
        """When the first zone started it."""
        return _earliest(play.t_started for play in self.zones().values())

    @property
    def t_first_audio(self) -> float | None:
        """When the first zone wrote speech."""
        return _earliest(play.t_first_audio for play in self.zones().values())

    @property
    def t_ended(self) -> float | None:
        """When the last zone ended; None while any zone plays (or before any is attached)."""
        ends = [play.t_ended for play in self.zones().values()]
        return max(ends) if ends and None not in ends else None

    @property
    def ended(self) -> bool:
        return self.t_ended is not None

    @property
    def played_out(self) -> bool:
        """Ended after its tail in every zone whose output did not fail, and in one zone at least."""
        plays = [p for p in self.zones().values() if p.error is None]
        return bool(plays) and all(p.played_out for p in plays)

    @property
    def error(self) -> str | None:
        """The output error when every zone failed (the play as a whole failed), else None."""
        plays = list(self.zones().values())
        return plays[0].error if plays and all(p.error for p in plays) else None

    # ---- the audio threads' side (each through its TrackReader, track_reader.py) ----

    @property
    def keep_partial(self) -> bool:
        """False when a cut play must leave no recording (a WAV file)."""
        with self._cond:
            return self._keep_partial

    def ready_for(self, zone: str, threshold: int) -> bool:
        with self._cond:
            return self._closed or self._available(zone) >= threshold

    def wait_for(self, zone: str, threshold: int, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(
                lambda: self._cut or self._closed or self._available(zone) >= threshold, timeout
            )

    def take_for(self, zone: str, n: int, reserve: int) -> tuple[Samples | None, bool]:
        with self._cond:
            available = self._available(zone)
            if self._closed and available <= n + reserve:
                return self._take(zone, available), True
            if not self._closed and available < n + reserve:
                return None, False
            return self._take(zone, n), False

    def take_now_for(self, zone: str, n: int) -> Samples:
        with self._cond:
            return self._take(zone, min(n, self._available(zone)))

    def zone(self, zone: str) -> ZonePlay:
        with self._cond:
            return self._zones[zone]

    def report(self, zone: str, **changes) -> None:
        """The audio thread of `zone` writes its progress (fields of ZonePlay)."""
        with self._cond:
            self._zones[zone] = replace(self._zones[zone], **changes)
            self._cond.notify_all()

    def _slowest(self) -> int:
        return min((play.taken for play in self._zones.values()), default=0)

    def _take(self, zone: str, n: int) -> Samples:
        """Samples [taken, taken + n) of `zone` (the caller checked they are here); trims what all took."""
        start = self._zones[zone].taken
        parts = [
            (samples[max(0, start - at) : start + n - at], levels[max(0, start - at) : start + n - at])
            for at, samples, levels in self._chunks
            if at < start + n and at + len(samples) > start
        ]
        self._zones[zone] = replace(self._zones[zone], taken=start + n)
        slowest = self._slowest()
        while self._chunks and self._chunks[0][0] + len(self._chunks[0][1]) <= slowest:
            self._chunks.popleft()
        if not parts:
            return Samples(np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32))
        return Samples(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    def _available(self, zone: str) -> int:
        return 0 if self._abandoned else self._received - self._zones[zone].taken


def _earliest(times) -> float | None:
    return min((t for t in times if t is not None), default=None)
