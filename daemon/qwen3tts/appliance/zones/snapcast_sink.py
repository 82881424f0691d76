"""A zone on Snapcast: each announcement streams into a snapserver stream, and the zone's groups listen to
it only while it plays (Music Assistant's way of announcing over Snapcast).

`begin()` reads snapserver's status (the stream's sampleformat: rate, 16-bit, mono or stereo, read again
for every announcement, so a reconfigured server is followed), records the stream each group of the
zone's clients plays (restore.py), switches those groups to the announcement stream (Group.SetStream) and
opens the source (pcm_source.py). `write()` converts 24 kHz float32 to the stream's format and paces it in
real time, so the stream never runs dry while synthesis catches up (the audio thread writes silence
then, as to a sound card) and never runs ahead of the clients' buffer. `end()` waits until the clients
have played the last sample (`buffer_ms` after it was written; at once after a cut), closes the source
and switches every group back. What was not switched back (snapserver down, our process killed) stays in
the record and is switched back by `recover()`, at the latest at the next start.

snapserver unreachable: the sink is `lost`, `begin()` fails the zone's play (an `error` for this zone) and
`recover()` tries again with backoff; nothing here raises out of the audio thread but AudioError.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from qwen3tts.appliance.audio.sinks import MODEL_RATE, Resampler
from qwen3tts.appliance.zones.pcm_source import PcmSource
from qwen3tts.appliance.zones.restore import RestoreRecord
from qwen3tts.appliance.zones.snapcast_rpc import (
    SnapcastControl,
    SnapcastError,
    SnapcastRefused,
    StreamFormat,
    groups_for,
    stream_format,
)
from qwen3tts.errors import AudioError
from qwen3tts.settings import SnapcastSettings

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
"""Waits between attempts to reach a lost snapserver; the last one repeats."""
LEAD_S = 0.25
"""How far ahead of real time writes may run; the source's buffer holds it (a socket's, or a FIFO's 64 KiB:
0.29 s with a 40 ms block at 48 kHz stereo). snapserver reads a source at its own pace and, when a read
comes late, restarts the stream's timeline: the clients hear a gap. So the lead is what a stall of the
audio thread may take on a loaded box without a gap; it was 50 ms, and a 120 ms stall in the test suite
cut an announcement. It delays nothing: the clients' buffer (1 s) comes after it, and a cut closes the
source and switches the groups back at once."""


class SnapcastSink:
    """The `Sink` of a Snapcast zone (sinks.py has the contract)."""

    paced = True

    def __init__(
        self,
        zone: str,
        settings: SnapcastSettings,
        restore_dir: Path,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        on_state: Callable[[str, str], None] | None = None,
    ) -> None:
        self.zone = zone
        self.settings = settings
        self.control = SnapcastControl(settings.host, settings.control_port, settings.connect_timeout_s)
        self.record = RestoreRecord(restore_dir, zone)
        self.source = PcmSource(settings.source, settings.connect_timeout_s)
        self.name = f"snapcast:{settings.stream}@{self.control.address}"
        self.state = "lost"
        self.format: StreamFormat | None = None
        self._clock, self._sleep, self._on_state = clock, sleep, on_state
        self._resampler: Resampler | None = None
        self._switched: dict[str, str] = {}
        self._due: float | None = None
        self._failures = 0
        self._next_attempt = 0.0

    def open(self) -> SnapcastSink:
        """Reach snapserver once (switching back what a crash left switched); never raises: an unreachable
        server leaves the sink `lost`, retried with backoff."""
        self.recover()
        return self

    # ---- one announcement ----

    def begin(self, item_id: str) -> None:
        if self.state != "ok" and not self.recover():
            raise AudioError(f"{self.name} is unreachable; retrying in the background")
        stream = self.settings.stream
        try:
            status = self.control.status()
            self._set_format(stream_format(status, stream))
            groups = groups_for(status, self.settings.clients)
            if not groups:
                raise SnapcastError(f"no Snapcast group holds a client of {', '.join(self.settings.clients)}")
            to_switch = {group: was for group, was in groups.items() if was != stream}
            self.record.remember(to_switch)
            for group in to_switch:
                self.control.set_stream(group, stream)
                self._switched[group] = to_switch[group]
            self.source.open(probe=self._silence(0.01))
        except (SnapcastError, OSError) as exc:
            raise self._lose(exc) from exc
        log.info("%s: zone %s on %s (groups %s)", item_id, self.zone, self.name, ", ".join(groups))
        self._due = None

    def write(self, block: np.ndarray) -> bool:
        if self.state != "ok" or self._resampler is None or not self.source.is_open:
            raise AudioError(f"{self.name} is {self.state}")
        self._send(self._resampler.process(block))
        now = self._clock()
        self._due = max(self._due or now, now) + len(block) / MODEL_RATE
        ahead = self._due - now - LEAD_S
        if ahead > 0:
            self._sleep(ahead)
        return False

    def latency(self) -> float:
        return self.settings.buffer_ms / 1000

    def end(self, complete: bool = True) -> None:
        """Wait until the clients played the last sample (not after a cut), then switch the groups back."""
        try:
            if self.state == "ok" and self.source.is_open and self._resampler is not None:
                self._send(self._resampler.flush())
                if complete and self._due is not None:
                    self._sleep(max(0.0, self._due + self.latency() - self._clock()))
        finally:
            self.source.release()
            self._due = None
            switched, self._switched = self._switched, {}
            self._switch_back(switched)

    # ---- staying reachable ----

    def recover(self) -> bool:
        """Reach a lost snapserver when its backoff has passed (and switch back what waits); True when ok."""
        if self.state == "ok":
            return True
        if self._clock() < self._next_attempt:
            return False
        try:
            status = self.control.status()
            self._set_format(stream_format(status, self.settings.stream))
        except SnapcastError as exc:
            delay = RETRY_BACKOFF_S[min(self._failures, len(RETRY_BACKOFF_S) - 1)]
            self._failures += 1
            self._next_attempt = self._clock() + delay
            log.warning("zone %s: %s; next attempt in %.0f s", self.zone, exc, delay)
            return False
        self._failures = 0
        self._set_state("ok", f"reached snapserver at {self.control.address}")
        self._switch_back(self.record.pending())
        return True

    def close(self) -> None:
        self.source.close()
        if self.state == "ok":
            self._switch_back({**self.record.pending(), **self._switched})
        self.state = "closed"

    # ---- helpers ----

    def _set_format(self, fmt: StreamFormat) -> None:
        if fmt != self.format or self._resampler is None:
            self.format, self._resampler = fmt, Resampler(fmt.rate)
            log.info("zone %s: stream %s is %d Hz, %d channel(s)", self.zone, self.settings.stream,
                     fmt.rate, fmt.channels)  # fmt: skip

    def _silence(self, seconds: float) -> bytes:
        return bytes(2 * self.format.channels * int(self.format.rate * seconds))

    def _send(self, samples: np.ndarray) -> None:
        if not len(samples):
            return
        pcm = np.round(np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2")
        if self.format.channels == 2:
            pcm = np.repeat(pcm, 2)  # interleaved L R, both the same
        try:
            self.source.write(pcm.tobytes())
        except OSError as exc:
            raise self._lose(exc) from exc

    def _switch_back(self, groups: dict[str, str]) -> None:
        """Each group back to its stream; what fails stays recorded for `recover()`."""
        if not groups:
            return
        back = []
        for group, stream in groups.items():
            try:
                self.control.set_stream(group, stream)
                back.append(group)
            except SnapcastRefused as exc:  # the group or its stream is gone: nothing left to switch back
                log.info("zone %s: group %s not switched back: %s", self.zone, group, exc)
                back.append(group)
            except SnapcastError as exc:
                self._lose(exc)
                break
        try:
            self.record.forget(back)
        except OSError as exc:
            log.warning("zone %s: cannot update %s: %s", self.zone, self.record.path, exc.strerror)
        if back:
            log.info("zone %s: groups %s switched back", self.zone, ", ".join(back))

    def _lose(self, exc: Exception) -> AudioError:
        """Mark snapserver lost (retried with backoff); returns the AudioError to raise."""
        self.source.close()
        if self.state == "ok":
            log.error("zone %s: %s lost: %s", self.zone, self.name, exc)
        self._failures = max(self._failures, 1)
        self._next_attempt = self._clock() + RETRY_BACKOFF_S[0]
        self._set_state("lost", f"{type(exc).__name__}: {exc}")
        return exc if isinstance(exc, AudioError) else AudioError(f"{self.name}: {exc}")

    def _set_state(self, state: str, detail: str) -> None:
        changed, self.state = state != self.state, state
        if changed and self._on_state is not None:
            self._on_state(state, detail)
