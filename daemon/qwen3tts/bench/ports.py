"""Free loopback ports for the measuring scripts and the tests' servers, brokers and rigs.

A port picked by binding to 0 comes from the kernel's ephemeral range, the range every outgoing
connection takes its local port from: between the pick and the server's own bind (seconds, when a
runtime compiles in between) any client connection on the machine may take it, and the server fails
with "Address already in use" (it did, once, on a loaded CI machine). Ports below that range are only
ever taken by listeners that ask for them, so we pick there: each process walks its own stretch
(started from its pid) and skips any port something is bound to.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from pathlib import Path

_LOWEST = 20_000  # above the services a test may start on their default ports (mosquitto, Wyoming 10200)
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_lock = threading.Lock()
_walk: tuple[int, itertools.count] | None = None  # (the pid it belongs to, its next candidates)


def _ephemeral_start() -> int:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _candidates() -> itertools.count:
    global _walk
    pid = os.getpid()
    if _walk is None or _walk[0] != pid:  # a forked child walks its own stretch, not its parent's
        _walk = (pid, itertools.count(pid * 7919))  # neighbouring pids (a run's workers) start far apart
    return _walk[1]


def free_port(host: str = "127.0.0.1") -> int:
    """A port on `host` that nothing is bound to now and no outgoing connection will take."""
    span = _ephemeral_start() - _LOWEST
    with _lock:
        walk = _candidates()
        for _ in range(max(0, span)):  # none where the ephemeral range starts below ours
            port = _LOWEST + next(walk) % span
            with socket.socket() as sock:
                try:
                    sock.bind((host, port))
                except OSError:
                    continue
            return port
    with socket.socket() as sock:  # nothing free below the range: the kernel's pick, as before
        sock.bind((host, 0))
        return sock.getsockname()[1]
