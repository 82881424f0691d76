"""A loudspeaker the test controls: the reader of the FIFO that an ALSA `file` PCM writes into.

It takes samples at the rate a sound card would (so the daemon's blocking writes are paced as by a real
card) until `stall()`; then it holds the FIFO open and reads nothing, as a stuck driver or a half-unplugged
USB speaker does: once the pipe's buffer is full, every write into the PCM blocks inside alsa-lib.
`resume()` drains again. The ALSA configuration that points a PCM at it is `asound_conf()`.
"""

from __future__ import annotations

import os
import select
import threading
import time
from pathlib import Path

DEVICE_RATE = 44100  # what PortAudio reports for ALSA plugin PCMs
BYTES_PER_SECOND = DEVICE_RATE * 4  # float32 mono


def asound_conf(directory: Path, fifo: Path, pcm: str = "ttsfifo") -> Path:
    conf = directory / "asound.conf"
    conf.write_text(
        "</usr/share/alsa/alsa.conf>\n"
        f'pcm.{pcm} {{ type file; slave.pcm "null"; file "{fifo}"; format "raw" }}\n'
    )
    return conf


class FifoSpeaker:
    """Reads `fifo` in real time on a thread of its own; made before the daemon starts, so it has a reader."""

    def __init__(self, fifo: Path) -> None:
        os.mkfifo(fifo)
        self.fifo = fifo
        self.bytes_read = 0
        self._reading = threading.Event()
        self._reading.set()
        self._closing = threading.Event()
        # O_RDWR: the open does not wait for a writer, and the reader never sees EOF between the daemon's
        # opens and closes of the PCM (PortAudio opens every device once when it enumerates them).
        self._fd = os.open(fifo, os.O_RDWR)
        self._thread = threading.Thread(target=self._run, name="fifo-speaker", daemon=True)
        self._thread.start()

    def stall(self) -> None:
        self._reading.clear()

    def resume(self) -> None:
        self._reading.set()

    def close(self) -> None:
        self._closing.set()
        self._reading.set()
        self._thread.join(5)
        os.close(self._fd)

    def _run(self) -> None:
        chunk = BYTES_PER_SECOND // 25  # 40 ms
        next_read = time.monotonic()
        while not self._closing.is_set():
            if not self._reading.is_set():
                self._reading.wait()
                next_read = time.monotonic()
                continue
            if select.select([self._fd], [], [], 0.2)[0]:  # nothing written: look at `_closing` again
                self.bytes_read += len(os.read(self._fd, chunk))
            next_read = max(next_read + 0.04, time.monotonic() - 0.2)  # catches up 200 ms at most
            time.sleep(max(0.0, next_read - time.monotonic()))
