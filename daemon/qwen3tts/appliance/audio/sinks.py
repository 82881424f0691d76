"""Where played samples go, minus the sound card: the `Sink` contract, the WAV and null sinks, resampling.

Every sink takes 24 kHz float32 mono blocks (the model's rate) and converts to its own rate itself,
so the playback pipeline never knows the device rate. The ALSA sink lives in `alsa.py`; only
`alsa_devices.py` imports sounddevice.

Lifecycle, driven by the audio thread: `begin(id)` -> `write(block)`... -> `end()` per announcement,
`recover()` while idle, `close()` once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
import wave
from collections import deque
from pathlib import Path
from typing import Protocol

import numpy as np
import soxr

from qwen3tts.errors import AudioError

log = logging.getLogger(__name__)

MODEL_RATE = 24000
"""Sample rate of everything the engine produces and the playback pipeline handles, in Hz."""


class Sink(Protocol):
    """An audio output fed by blocking writes from one thread."""

    name: str
    """Short description for logs and status, e.g. 'alsa:ttsfile@44100'."""
    paced: bool
    """True when write() blocks in real time (a sound card); False when it returns at once (files)."""
    state: str
    """'ok', 'lost' (device gone, reopening with backoff) or 'closed'; for the MQTT status."""

    def begin(self, item_id: str) -> None:
        """Start of one announcement; raises AudioError when the output cannot be used now."""

    def write(self, block: np.ndarray) -> bool:
        """Queue 24 kHz float32 mono samples; True if the output underflowed since the last write."""

    def latency(self) -> float:
        """Seconds between a write returning and its last sample being heard."""

    def end(self, complete: bool = True) -> None:
        """End of one announcement: flush the resampler and block until everything written has played.

        `complete` is False when it was cut at shutdown: a sound card still drains, a file sink drops
        what it wrote so nothing half-said looks like a finished announcement."""

    def recover(self) -> bool:
        """Try to get a lost output back (respecting a backoff); True when the sink is usable."""

    def close(self) -> None:
        """Release the output for good."""


class Resampler:
    """Chunked 24 kHz -> `out_rate` with soxr; the concatenated output equals a one-shot resample."""

    def __init__(self, out_rate: int, in_rate: int = MODEL_RATE, quality: str = "HQ"):
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._stream = (
            None if out_rate == in_rate else soxr.ResampleStream(in_rate, out_rate, 1, "float32", quality)
        )

    def process(self, block: np.ndarray) -> np.ndarray:
        block = np.ascontiguousarray(block, dtype=np.float32)
        return block if self._stream is None else self._stream.resample_chunk(block)

    def flush(self) -> np.ndarray:
        """The samples still inside the filter; afterwards the resampler starts afresh."""
        if self._stream is None:
            return np.zeros(0, dtype=np.float32)
        tail = self._stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True)
        self._stream.clear()
        return tail


RECENT_ITEMS = 100
"""What a sink remembers of what it played: the last this many (a list grew by one per announcement)."""


class NullSink:
    """Discards audio but counts it; for machines without output and for tests."""

    paced = False
    state = "ok"

    def __init__(self) -> None:
        self.name = "null"
        self.samples_written = 0
        self.items: deque[str] = deque(maxlen=RECENT_ITEMS)
        """The last announcements begun (for tests); bounded: the sink runs for months."""

    def begin(self, item_id: str) -> None:
        self.items.append(item_id)

    def write(self, block: np.ndarray) -> bool:
        self.samples_written += len(block)
        return False

    def latency(self) -> float:
        return 0.0

    def end(self, complete: bool = True) -> None:
        pass

    def recover(self) -> bool:
        return True

    def close(self) -> None:
        pass


def _safe_stem(item_id: str) -> str:
    """An announcement id made safe as a file name (ids come from MQTT publishers)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", item_id)[:64].lstrip(".") or "announcement"


class WavSink:
    """One 16-bit mono WAV file per announcement, `<dir>/<nnnnnn>-<id>.wav`, written whole or not at all.

    The file is written as `.part` and renamed at `end()`, so a kiosk watching the directory never
    picks up half an announcement; a cut announcement's `.part` is deleted, and `.part` files a crash
    left behind are deleted when the sink opens. The counter prefix keeps repeats and equal ids apart.
    With `realtime`, each write returns only when a loudspeaker would have played it (a paced sink: the
    audio thread then behaves as with a sound card, silence included while synthesis falls behind).
    """

    state = "ok"

    def __init__(self, directory: Path, rate: int = MODEL_RATE, realtime: bool = False,
                 clock=time.monotonic, sleep=time.sleep):  # fmt: skip
        self.directory = Path(directory)
        self.rate = rate
        self.paced = realtime
        self.name = f"wav:{self.directory}@{rate}" + (" (real time)" if realtime else "")
        self._clock, self._sleep = clock, sleep
        self._due: float | None = None  # when the samples written so far have been "heard"
        self.paths: deque[str] = deque(maxlen=RECENT_ITEMS)
        """The last files written (for tests and tools); bounded: the sink runs for months."""
        self._resampler = Resampler(rate)
        self._wave: wave.Wave_write | None = None
        # file names are str, not Path: pathlib interns every part it parses, and a new name per
        # announcement would churn CPython's interned-strings table (docs/operations.md, "Memory")
        self._part: str | None = None
        self._count = 0
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AudioError(f"wav sink: cannot create {self.directory}: {exc.strerror}") from exc
        self._remove_stale_parts()

    def begin(self, item_id: str) -> None:
        self._abandon()
        self._count += 1
        self._part = os.path.join(self.directory, f"{self._count:06d}-{_safe_stem(item_id)}.wav.part")
        try:
            self._wave = wave.open(self._part, "wb")  # noqa: SIM115 - open across begin()..end()
        except OSError as exc:
            raise AudioError(f"wav sink: cannot write {self._part}: {exc.strerror}") from exc
        self._wave.setnchannels(1)
        self._wave.setsampwidth(2)
        self._wave.setframerate(self.rate)

    def write(self, block: np.ndarray) -> bool:
        self._write_pcm(self._resampler.process(block))
        if self.paced:
            now = self._clock()
            self._due = max(self._due or now, now) + len(block) / MODEL_RATE
            if self._due > now:
                self._sleep(self._due - now)
        return False

    def latency(self) -> float:
        return 0.0

    def end(self, complete: bool = True) -> None:
        self._due = None
        if self._wave is None or self._part is None:
            return
        if not complete:
            log.info("dropped %s: the announcement was cut", os.path.basename(self._part))
            self._abandon()
            return
        self._write_pcm(self._resampler.flush())
        self._wave.close()
        final = self._part.removesuffix(".part")
        os.replace(self._part, final)
        self.paths.append(final)
        log.info("wrote %s", final)
        self._wave, self._part = None, None

    def recover(self) -> bool:
        return True

    def close(self) -> None:
        self._abandon()

    def _write_pcm(self, samples: np.ndarray) -> None:
        if self._wave is None:
            raise AudioError("wav sink: write outside begin()/end()")
        pcm = np.round(np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2")
        try:
            self._wave.writeframes(pcm.tobytes())
        except OSError as exc:
            raise AudioError(f"wav sink: cannot write {self._part}: {exc.strerror}") from exc

    def _remove_stale_parts(self) -> None:
        """Half-written files of a process that died mid-announcement: never finished, never published."""
        for stale in sorted(self.directory.glob("*.wav.part")):
            try:
                stale.unlink()
                log.info("removed %s, left by an earlier crash", stale)
            except OSError as exc:
                log.warning("cannot remove %s: %s", stale, exc.strerror)

    def _abandon(self) -> None:
        """Drop a half-written file (an announcement that failed before end())."""
        if self._wave is not None and self._part is not None:
            self._wave.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._part)
            self._resampler.flush()
        self._wave, self._part = None, None
