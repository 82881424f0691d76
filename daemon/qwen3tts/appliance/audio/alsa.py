"""The sound card: the ALSA sink through sounddevice (PortAudio), and the choice of sink.

sounddevice is loaded, and the device found by name, by alsa_devices.py (lazily: a machine without
libportaudio2 still runs with the WAV or null sink). One long-lived OutputStream, opened at the
device's own default rate (24 kHz -> device rate is resampled here with soxr, not by alsa-lib), fed
by blocking writes from the one audio thread; `end()` stops the stream, which drains it, so "finished"
really means played. Every call into the stream runs on the stream's own DeviceThread (device_thread.py)
with a deadline (`audio.stall_timeout_s`): a device that stops taking samples fails the play with
DeviceStalled instead of blocking the audio thread. A failed or stalled call marks the device lost;
`begin()`/`recover()` then re-initialise PortAudio (its device list is frozen at start), find the
device by name again and reopen, with backoff. A stream stuck in the driver is left to its thread;
PortAudio is not re-initialised under it, and at most MAX_STUCK of them are left before reopening
waits for one to come back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from qwen3tts.appliance.audio.alsa_devices import load_backend, resolve_output_device
from qwen3tts.appliance.audio.device_thread import DeviceStalled, DeviceThread
from qwen3tts.appliance.audio.sinks import MODEL_RATE, NullSink, Resampler, Sink, WavSink
from qwen3tts.errors import AudioError

if TYPE_CHECKING:
    from qwen3tts.settings import AudioSettings

log = logging.getLogger(__name__)

REOPEN_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
"""Waits between attempts to reopen a lost device; the last one repeats."""

MAX_STUCK = 2
"""Streams left stuck in the driver before the sink stops opening new ones (each holds a thread)."""

StateCallback = Callable[[str, str], None]
"""on_state(state, detail): state is 'ok' or 'lost'; detail says why, for logs and MQTT status."""


class AlsaSink:
    """A PortAudio output stream, mono float32 at the device's default rate; see the module docstring."""

    paced = True

    def __init__(
        self,
        device: str = "",
        *,
        block_ms: int = 40,
        latency: str | float = "high",
        stall_timeout_s: float = 5.0,
        on_state: StateCallback | None = None,
        clock: Callable[[], float] = time.monotonic,
        backend: Any = None,
    ):
        self.device = device
        self.block_ms = block_ms
        self.name = f"alsa:{device or 'default'}"
        self.rate = 0
        self.channels = 0
        self.state = "closed"
        self._latency_setting = latency
        self._stall_s = stall_timeout_s
        self._on_state = on_state
        self._clock = clock
        self._sd = backend
        self._stream: Any = None
        self._thread: DeviceThread | None = None  # makes every call into _stream
        self._stuck: list[DeviceThread] = []  # retired threads whose call may still be inside the driver
        self._latency = 0.0
        self._resampler: Resampler | None = None
        self._failures = 0
        self._next_attempt = 0.0

    def open(self) -> AlsaSink:
        """Find the device by name and open the stream; raises AudioError."""
        if self._sd is None:
            self._sd = load_backend()
        info = resolve_output_device(self._sd, self.device)
        self.rate = int(info["default_samplerate"])
        thread, opened = DeviceThread(f"alsa:{info['name']}"), []
        try:  # opening may block too (a file PCM's FIFO that nobody reads)
            thread.call(lambda: opened.append(self._open_stream(info)), timeout=self._stall_s,
                        what=f"opening {info['name']!r}")  # fmt: skip
        except AudioError:
            self._retire(thread, lambda: opened and self._abort_and_close(opened[0][0]))
            raise
        self._thread, (self._stream, self.channels) = thread, opened[0]
        self._latency = float(self._stream.latency)
        self._resampler = Resampler(self.rate)
        self.name = f"alsa:{info['name']}@{self.rate}"
        log.info(
            "audio output %s, %d channel(s), latency %.0f ms", self.name, self.channels, self._latency * 1000
        )
        self._set_state("ok", f"opened {info['name']}")
        return self

    def _open_stream(self, info: dict[str, Any]) -> tuple[Any, int]:
        # Mono first; raw hw: devices often insist on stereo, so fall back to two identical channels.
        errors = []
        for channels in (1, 2):
            if channels > info["max_output_channels"]:
                break
            try:
                stream = self._sd.OutputStream(
                    device=info["index"],
                    samplerate=self.rate,
                    channels=channels,
                    dtype="float32",
                    blocksize=max(1, self.rate * self.block_ms // 1000),
                    latency=self._latency_setting,
                )
                return stream, channels
            except (self._sd.PortAudioError, ValueError) as exc:
                errors.append(f"{channels} ch: {exc}")
        raise AudioError(f"cannot open output device {info['name']!r} at {self.rate} Hz: {'; '.join(errors)}")

    def begin(self, item_id: str) -> None:
        if self.state != "ok" and not self.recover():
            raise AudioError(f"audio output {self.name} is {self.state}; retrying in the background")
        stream = self._stream
        self._on_device(lambda: stream.active or stream.start(), "starting the stream")

    def write(self, block: np.ndarray) -> bool:
        if self.state != "ok" or self._resampler is None:
            raise AudioError(f"audio output {self.name} is {self.state}")
        return self._write_device(self._resampler.process(block))

    def _write_device(self, samples: np.ndarray) -> bool:
        if len(samples) == 0:
            return False
        frames = samples.reshape(-1, 1)  # (n, 1)
        if self.channels == 2:
            frames = np.repeat(frames, 2, axis=1)  # (n, 2)
        frames, stream = np.ascontiguousarray(frames), self._stream
        return bool(self._on_device(lambda: stream.write(frames), "a write"))

    def latency(self) -> float:
        return self._latency if self._stream is not None and self.state == "ok" else 0.0

    def end(self, complete: bool = True) -> None:  # cut or not, what was written plays out
        if self.state != "ok" or self._resampler is None:
            return
        self._write_device(self._resampler.flush())
        stream = self._stream  # stop() blocks until the written audio has played out: allow for that too
        self._on_device(stream.stop, "draining the stream", extra_s=self._latency)

    def recover(self) -> bool:
        """Reopen a lost device when its backoff has passed; True when the sink is usable."""
        if self.state == "ok":
            return True
        if self._clock() < self._next_attempt:
            return False
        self._close_stream()
        self._stuck = [thread for thread in self._stuck if thread.alive]
        try:
            if len(self._stuck) >= MAX_STUCK:
                raise AudioError(
                    f"{len(self._stuck)} streams are stuck in the driver; waiting for one to return"
                )
            if not self._stuck:  # never under a stream stuck in it: re-initialising frees what it uses
                # PortAudio enumerates devices only at initialisation: a replugged USB speaker needs one.
                self._sd._terminate()
                self._sd._initialize()
            self.open()
        except (AudioError, self._sd.PortAudioError) as exc:
            delay = REOPEN_BACKOFF_S[min(self._failures, len(REOPEN_BACKOFF_S) - 1)]
            self._failures += 1
            self._next_attempt = self._clock() + delay
            log.warning(
                "audio output %s still lost (%s); next attempt in %.0f s",
                self.device or "default",
                exc,
                delay,
            )
            return False
        self._failures = 0
        return True

    def close(self) -> None:
        self._close_stream()
        self.state = "closed"

    def _on_device(self, fn: Callable[[], Any], what: str, extra_s: float = 0.0) -> Any:
        """`fn()` on the stream's device thread within the stall deadline; a failure or a stall loses the
        device and is raised as AudioError."""
        if self._thread is None:
            raise AudioError(f"audio output {self.name} is {self.state}")
        try:
            return self._thread.call(fn, timeout=self._stall_s + extra_s, what=what)
        except (DeviceStalled, self._sd.PortAudioError) as exc:
            raise self._lose(exc) from exc

    def _lose(self, exc: Exception) -> AudioError:
        """Mark the device lost and tell the status listener; returns the AudioError to raise."""
        log.error("audio output %s lost: %s", self.name, exc)
        self._close_stream()
        self._failures = 1  # the first wait is REOPEN_BACKOFF_S[0]; each failed attempt waits longer
        self._next_attempt = self._clock() + REOPEN_BACKOFF_S[0]
        self._set_state("lost", f"{type(exc).__name__}: {exc}")
        return AudioError(f"audio output {self.name} lost: {exc}")

    def _close_stream(self) -> None:
        """Abort and close the stream on its thread; a stuck thread closes it if its call ever returns."""
        thread, stream = self._thread, self._stream
        self._thread, self._stream = None, None
        if thread is None:
            return
        cleanup = partial(self._abort_and_close, stream)
        if not thread.stuck:
            try:
                thread.call(cleanup, timeout=self._stall_s, what="closing the stream")
                cleanup = partial(self._abort_and_close, None)  # closed: nothing left to do
            except DeviceStalled as exc:
                log.warning("audio output %s: %s; leaving it to its thread", self.name, exc)
        self._retire(thread, cleanup)

    def _retire(self, thread: DeviceThread, cleanup: Callable[[], object]) -> None:
        """End `thread` after its cleanup; kept in `_stuck` while a call of it may be inside the driver."""
        if thread.stuck:
            self._stuck.append(thread)
        thread.retire(cleanup)

    def _abort_and_close(self, stream: Any) -> None:
        if stream is None:
            return
        try:
            stream.abort()
            stream.close()
        except (self._sd.PortAudioError, OSError):  # the device may be gone already: closing is best effort
            log.debug("closing the audio stream failed", exc_info=True)

    def _set_state(self, state: str, detail: str) -> None:
        changed = state != self.state
        self.state = state
        if changed and self._on_state is not None:
            self._on_state(state, detail)


def open_sink(settings: AudioSettings, *, on_state: StateCallback | None = None) -> Sink:
    """The sink named by settings.sink: alsa | wav | null | auto (ALSA if it opens, else WAV files).

    `auto` never fails for want of a sound card: it logs why ALSA was not used and falls back to WAV.
    Raises AudioError when an explicitly chosen sink cannot be opened.
    """
    sink, device, wav_dir, block_ms = settings.sink, settings.device, settings.wav_dir, settings.block_ms
    if sink == "null":
        return NullSink()
    if sink == "wav":
        return WavSink(wav_dir, realtime=settings.wav_realtime)
    stall_s = settings.stall_timeout_s
    if sink == "alsa":
        return AlsaSink(device, block_ms=block_ms, stall_timeout_s=stall_s, on_state=on_state).open()
    if sink == "auto":
        try:
            return AlsaSink(device, block_ms=block_ms, stall_timeout_s=stall_s, on_state=on_state).open()
        except AudioError as exc:
            # what `auto` promises, so not a warning; `audio.sink: alsa` makes a missing card an error
            log.info("no ALSA output (%s); audio.sink auto writes WAV files to %s", exc, wav_dir)
            return WavSink(wav_dir)
    raise AudioError(f"unknown audio sink {sink!r} (alsa, wav, null or auto)")


__all__ = ["MODEL_RATE", "AlsaSink", "open_sink"]
