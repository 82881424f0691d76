"""Where a Snapcast zone's PCM goes: a snapserver stream source, `tcp://host:port` or `pipe:///path`.

`tcp://` connects to a stream whose source is `tcp://...?mode=server` (snapserver listens; it may run on
another machine), once per announcement: a connection refused at the start is a server that is down now,
not one that went away an hour ago. `pipe:///path` writes into the FIFO of a `pipe://` stream on this
host (snapserver creates it with `mode=create`). snapserver 0.26 opens its end of a FIFO for a moment
every 100 ms while no writer is there (it reads end-of-file and closes it again), so a writer that opens
the FIFO write-only almost never finds a reader (ENXIO, measured: 200 of 200 attempts). The FIFO is
therefore opened read-write, which never waits for a reader, and kept open between announcements; the
price is that a snapserver that restarts is not noticed (the pipe buffers its 64 KiB) — one reason
`tcp://` is the default (docs/operations.md). Both carry raw little-endian PCM
in the stream's sampleformat. Every write is bounded by the timeout, so a snapserver that stops reading
fails the zone instead of hanging its audio thread; a snapserver that went away fails the next write
(EPIPE / ECONNRESET).
"""

from __future__ import annotations

import os
import select
import socket
import time
from urllib.parse import urlsplit

from qwen3tts.errors import AudioError


def parse_source(uri: str) -> tuple[str, str, int]:
    """(scheme, host or path, port) of a source URI; AudioError for anything else."""
    parts = urlsplit(uri)
    if parts.scheme == "tcp" and parts.hostname:
        return "tcp", parts.hostname, parts.port or 4953
    if parts.scheme == "pipe" and parts.path:
        return "pipe", parts.path, 0
    raise AudioError(f"snapcast source {uri!r}: expected tcp://host:port or pipe:///path")


class PcmSource:
    """One connection (or open FIFO) to a snapserver stream source, opened per announcement."""

    def __init__(self, uri: str, timeout: float = 2.0) -> None:
        self.uri = uri
        self.scheme, self.where, self.port = parse_source(uri)
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._fd: int | None = None

    @property
    def is_open(self) -> bool:
        return self._sock is not None or self._fd is not None

    def open(self, probe: bytes = b"") -> None:
        """Ready for an announcement; OSError when snapserver does not listen (tcp) or the FIFO is not
        there (pipe). `probe` (a little silence) is written first."""
        if self.scheme == "tcp":
            self.close()
            self._sock = socket.create_connection((self.where, self.port), timeout=self.timeout)
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return
        if self._fd is None:
            self._fd = os.open(self.where, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self.write(probe)

    def release(self) -> None:
        """The announcement is over: a connection closes, a FIFO stays open (see the module docstring)."""
        if self.scheme == "tcp":
            self.close()

    def write(self, data: bytes) -> None:
        """All of `data`, within the timeout; OSError when the reader went away or stalled."""
        if self._sock is not None:
            self._sock.sendall(data)
            return
        if self._fd is None:
            raise OSError("the snapcast source is not open")
        view, deadline = memoryview(data), time.monotonic() + self.timeout
        while view:
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [self._fd], [], left)[1]:
                    raise TimeoutError(f"snapserver stopped reading {self.where}") from None

    def close(self) -> None:
        sock, self._sock = self._sock, None
        fd, self._fd = self._fd, None
        if sock is not None:
            sock.close()
        if fd is not None:
            os.close(fd)
