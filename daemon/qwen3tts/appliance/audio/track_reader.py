"""One zone's view of a track (track.py): what that zone's audio thread plays the track through.

Several zones may play one track, each on its own audio thread at its own pace; each takes its samples and
writes its progress through its reader, all of it behind the track's one lock.
"""

from __future__ import annotations

import numpy as np

from qwen3tts.appliance.audio.track import DEFAULT_ZONE, HowToPlay, Samples, Track, ZonePlay


class TrackReader:
    """The audio thread's side of one track in one zone."""

    def __init__(self, track: Track, zone: str = DEFAULT_ZONE) -> None:
        track.attach((zone,))
        self.track = track
        self.zone = zone
        self.label = track.label

    @property
    def how(self) -> HowToPlay:
        return self.track.how

    @property
    def is_cut(self) -> bool:
        return self.track.is_cut

    @property
    def keep_partial(self) -> bool:
        return self.track.keep_partial

    @property
    def start_threshold(self) -> int:
        return self.track.start_threshold

    @property
    def play(self) -> ZonePlay:
        """This zone's progress so far."""
        return self.track.zone(self.zone)

    def ready(self, threshold: int) -> bool:
        """True when `threshold` samples are buffered for this zone or the source has ended."""
        return self.track.ready_for(self.zone, threshold)

    def wait(self, threshold: int, timeout: float) -> bool:
        """Block up to `timeout` seconds for `ready(threshold)` or a cut."""
        return self.track.wait_for(self.zone, threshold, timeout)

    def take(self, n: int, reserve: int = 0) -> tuple[np.ndarray | None, bool]:
        """Up to `n` samples and whether they are the last ones; (None, False) when not enough is here yet.

        While the source runs, `reserve` samples are held back so the final block is always long enough
        for the fade-out; once it has ended, a remainder shorter than n + reserve comes in one final block.
        """
        block, last = self.take_levelled(n, reserve)
        return (None if block is None else block.pcm), last

    def take_levelled(self, n: int, reserve: int = 0) -> tuple[Samples | None, bool]:
        """`take()` with each sample's loudness estimate (what the zone levels from)."""
        return self.track.take_for(self.zone, n, reserve)

    def take_now(self, n: int) -> np.ndarray:
        """Up to `n` samples, whatever is here, without waiting (the fade-out of a cut)."""
        return self.take_now_levelled(n).pcm

    def take_now_levelled(self, n: int) -> Samples:
        return self.track.take_now_for(self.zone, n)

    def started(self, t: float) -> None:
        self.track.report(self.zone, t_started=t)

    def first_audio(self, t: float) -> None:
        if self.play.t_first_audio is None:
            self.track.report(self.zone, t_first_audio=t)

    def underflowed(self) -> None:
        self.track.report(self.zone, underflows=self.play.underflows + 1)

    def failed(self, error: str) -> None:
        self.track.report(self.zone, error=self.play.error or error)

    def finished(self, t: float, played_out: bool) -> None:
        """The last sample was heard at `t` in this zone (the announcer turns this into events)."""
        self.track.report(self.zone, t_ended=t, played_out=played_out and self.play.error is None)
