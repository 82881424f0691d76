"""A stand-in for systemd's notify socket: a bound AF_UNIX datagram socket in a test's directory."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def notify_socket(directory: Path, timeout: float = 10.0) -> Iterator[socket.socket]:
    """Bound at `<directory>/notify.sock` (its `getsockname()` is what NOTIFY_SOCKET names); closed after."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(Path(directory) / "notify.sock"))
    server.settimeout(timeout)
    try:
        yield server
    finally:
        server.close()
