"""A Rhasspy satellite as a zone: the announcement's audio goes out as one WAV over MQTT, and the play
ends when the satellite says it has played it.

Rhasspy's TTS speaks for a satellite by publishing the whole WAV to
`hermes/audioServer/<siteId>/playBytes/<requestId>` and waiting for that site's `playFinished` with the
same id before its `sayFinished`. Here the satellite is one zone of the box: the announcer synthesises
and queues for it as for any zone, `HermesSatelliteSink` collects the samples (`begin` ... `write`),
publishes the WAV at `end` and blocks there until `SatelliteWaits` hears the satellite's playFinished,
so `finished` (and sayFinished) follow the satellite's playout. No playFinished within the audio's
length plus `mqtt.hermes_play_timeout` raises AudioError: the play ends in an `error` naming the zone
(sayFinished still goes out, once). A cut announcement is not sent at all.
"""

from __future__ import annotations

import io
import logging
import threading
import time
import wave
from collections.abc import Callable

import numpy as np

from qwen3tts.appliance.audio.sinks import MODEL_RATE
from qwen3tts.errors import AudioError

log = logging.getLogger(__name__)

WAIT_SLICE_S = 1.0
"""The audio thread waits for playFinished in slices this long, beating its heartbeat between them."""


class SatelliteWaits:
    """Which (siteId, requestId) plays are waiting for their playFinished; any thread may call it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[tuple[str, str], threading.Event] = {}

    def expect(self, site_id: str, request_id: str) -> threading.Event:
        """Register before publishing, so a fast satellite's answer is never missed."""
        with self._lock:
            return self._waiting.setdefault((site_id, request_id), threading.Event())

    def forget(self, site_id: str, request_id: str) -> None:
        with self._lock:
            self._waiting.pop((site_id, request_id), None)

    def play_finished(self, site_id: str, request_id: str) -> bool:
        """The intake's thread: a satellite's playFinished; False when nothing waits for it."""
        with self._lock:
            done = self._waiting.get((site_id, request_id))
        if done is None:
            return False
        done.set()
        return True


def wav_bytes(samples: np.ndarray, rate: int = MODEL_RATE) -> bytes:
    """16-bit mono PCM WAV of float samples in [-1, 1]."""
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm.tobytes())
    return out.getvalue()


class HermesSatelliteSink:
    """The sink of a satellite zone: collects one announcement, publishes its WAV, waits for playout."""

    paced = False
    state = "ok"  # the broker, not we, knows whether the satellite is there

    def __init__(
        self,
        site_id: str,
        send: Callable[[str, str, bytes], object],
        waits: SatelliteWaits,
        *,
        timeout_s: float,
        heartbeat: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.site_id = site_id
        self.name = f"hermes:{site_id}"
        self._send = send
        """send(siteId, requestId, wav): publishes it to hermes/audioServer/<siteId>/playBytes/<requestId>."""
        self._waits = waits
        self.timeout_s = timeout_s
        self._beat = heartbeat
        self._clock = clock
        self._id: str | None = None
        self._blocks: list[np.ndarray] = []

    def begin(self, item_id: str) -> None:
        self._id, self._blocks = item_id, []

    def write(self, block: np.ndarray) -> bool:
        self._blocks.append(np.asarray(block, dtype=np.float32).copy())
        return False

    def latency(self) -> float:
        return 0.0  # end() returns only once the satellite has played it

    def end(self, complete: bool = True) -> None:
        request_id, blocks = self._id, self._blocks
        self._id, self._blocks = None, []
        if not complete or request_id is None:
            return  # cut: the satellite is sent nothing half-said
        samples = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.float32)
        done = self._waits.expect(self.site_id, request_id)
        try:
            self._send(self.site_id, request_id, wav_bytes(samples))
            log.info("%s: sent %.1f s of audio to satellite %s", request_id, len(samples) / MODEL_RATE,
                     self.site_id)  # fmt: skip
            allowed = len(samples) / MODEL_RATE + self.timeout_s
            if not self._wait(done, allowed):
                raise AudioError(f"satellite {self.site_id} sent no playFinished within {allowed:.1f} s")
        finally:
            self._waits.forget(self.site_id, request_id)

    def _wait(self, done: threading.Event, allowed: float) -> bool:
        deadline = self._clock() + allowed
        while not done.is_set():
            left = deadline - self._clock()
            if left <= 0:
                return False
            done.wait(min(WAIT_SLICE_S, left))
            self._beat()
        return True

    def recover(self) -> bool:
        return True

    def close(self) -> None:
        pass
