"""What a network client may hold, shared by the servers: connections, time, and file handles.

- The limits themselves are the `servers.*` settings (ServersSettings: caps, idle/read/write timeouts,
  the longest request, the file reserve).
- `FileBudget`: the process's file-handle limit, raised at start as far as the hard limit allows, and a
  reserve no connection may take, so the spool, MQTT and logs keep working when the servers are full.
  Linux hands out the lowest free descriptor, so an accepted socket whose number reaches the reserve
  means the process is that close to its limit: it is closed at once.
- `ConnectionGate`: open connections of one server, in all and per client address.
- `Listener`: our own accept loop over a bound socket. asyncio's (`start_server`, `create_server`)
  logs a traceback for every failed accept() and on EMFILE schedules a retry per attempt: 268,649
  tracebacks in 45 s (issue 27). Here an accept error is logged once per interval (`ThrottledLog`),
  accepting pauses briefly and resumes, and a refused connection is told why, then closed gracefully
  (`linger`): its client's request is read and dropped until it closes or LINGER_S passes, because
  closing a socket with unread bytes resets the connection, and a client still writing its request
  would see the reset instead of the answer (34 of 200 refused connections did, issue 37).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import resource
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from qwen3tts.settings import ServersSettings

log = logging.getLogger(__name__)

ACCEPT_PAUSE_S = 0.25
"""How long accepting pauses after accept() failed (e.g. EMFILE); the listen backlog waits meanwhile."""
LOG_INTERVAL_S = 60.0
LINGER_S = 1.0
"""How long a refused connection is read (and what it sends dropped) before it is closed anyway."""
MAX_LINGERING = 256
"""Refused connections lingering at once per server; past it one is closed right after its answer and
what it had sent so far (a client still writing may then see a reset): a flood of refusals cannot hold
more file handles than this, and never one of the reserve (FileBudget)."""
SEND_BUFFER_BYTES = 128 * 1024
"""The kernel send buffer of each admitted connection. Left to autotune it grows to 4 MB (85 s of
24 kHz audio on loopback, measured), all of which a client that never reads takes before the write
timeout can start; 128 KiB (the kernel doubles it) is still seconds of audio, far above what streaming
audio needs in flight, and a client that stops reading stalls after about 5 s of audio."""


class ThrottledLog:
    """A recurring condition logged at most once per interval per key, with how often it recurred."""

    def __init__(self, logger: logging.Logger, interval_s: float = LOG_INTERVAL_S, clock=time.monotonic,
                 level: int = logging.WARNING):  # fmt: skip
        self._log = logger
        self._level = level
        self._interval_s = interval_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._since: Counter[str] = Counter()

    def log(self, key: str, message: str, *args) -> bool:
        """Log `message % args` unless `key` was logged less than an interval ago; True if logged."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self._interval_s:
            self._since[key] += 1
            return False
        repeated = self._since.pop(key, 0)
        suffix = f" ({repeated} more in the last {now - last:.0f} s)" if repeated else ""
        self._log.log(self._level, message + suffix, *args)
        self._last[key] = now
        return True


class FileBudget:
    """The file-handle limit of the process and the reserve kept free for the rest of the daemon."""

    def __init__(self, reserve: int, wanted_connections: int):
        """Raise the soft RLIMIT_NOFILE towards what the servers may use plus the reserve, within the
        hard limit; warn when even that leaves the connection caps unreachable."""
        in_use = _open_file_count()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = in_use + wanted_connections + reserve
        if soft != resource.RLIM_INFINITY and soft < wanted:
            raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                log.info("servers: file handle limit raised from %d to %d", soft, raised)
                soft = raised
        if soft < wanted:
            log.warning(
                "servers: %d file handles allowed, %d in use: %d connections fit before the reserve of %d "
                "(raise LimitNOFILE or lower servers.max_connections)",
                soft, in_use, max(0, soft - in_use - reserve), reserve,
            )  # fmt: skip
        self.limit = soft
        self.reserve = reserve

    @property
    def ceiling(self) -> int:
        """The lowest descriptor number a connection may not have."""
        return self.limit - self.reserve

    def allows(self, fd: int) -> bool:
        return fd < self.ceiling


def _open_file_count() -> int:
    """Descriptors open now (Linux /proc); read once at start, never per connection."""
    try:
        return sum(1 for _ in os.scandir("/proc/self/fd"))
    except OSError:
        return 0


class ConnectionGate:
    """The open connections of one server: at most `max_connections`, `max_per_client` per address."""

    def __init__(self, server: str, limits: ServersSettings, files: FileBudget):
        self.server = server
        self.limits = limits
        self.files = files
        self.open = 0
        self._per_client: Counter[str] = Counter()

    def refusal(self, fd: int, client: str) -> tuple[str, str] | None:
        """Why a new connection from `client` on descriptor `fd` is refused, as (kind, text), or None."""
        limits = self.limits
        if not self.files.allows(fd):
            return "files", f"file handles low ({self.files.reserve} kept for the daemon)"
        if self.open >= limits.max_connections:
            return "server", f"{limits.max_connections} connections are open (servers.max_connections)"
        if self._per_client[client] >= limits.max_connections_per_client:
            cap = limits.max_connections_per_client
            return "client", f"{cap} connections from {client} are open (servers.max_connections_per_client)"
        return None

    def admit(self, client: str) -> None:
        self.open += 1
        self._per_client[client] += 1

    def release(self, client: str) -> None:
        self.open -= 1
        self._per_client[client] -= 1
        if self._per_client[client] <= 0:
            del self._per_client[client]


OnConnection = Callable[[socket.socket, str], Awaitable[None]]
OnRefused = Callable[[socket.socket, str], None]
MakeRoom = Callable[[str | None], bool]


class Listener:
    """Accepts on a bound, non-blocking socket; admitted connections run `on_connection(sock, client)`
    as tasks, refused ones get `on_refused(sock, reason)` (which must not block) and are closed.

    Over a connection cap, `make_room(client)` (of that client; None: of anyone) may first close a
    connection that holds a slot without doing anything, an HTTP keep-alive connection between two
    requests: a client's idle pool then never locks the client itself (or others) out. The new one is
    admitted at once; the closed one leaves the count when its close completes, a moment later.
    """

    def __init__(self, sock: socket.socket, gate: ConnectionGate, on_connection: OnConnection,
                 on_refused: OnRefused | None = None, make_room: MakeRoom | None = None):  # fmt: skip
        self.sock = sock
        self.gate = gate
        self._on_connection = on_connection
        self._on_refused = on_refused
        self._make_room = make_room
        self._warnings = ThrottledLog(log)
        self._accepting: asyncio.Task | None = None
        self.connections: set[asyncio.Task] = set()
        self.lingering: set[asyncio.Task] = set()  # refused connections being closed gracefully

    def start(self) -> None:
        self._accepting = asyncio.create_task(self._accept_loop(), name=f"{self.gate.server}-accept")

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        server = self.gate.server
        while True:
            try:
                conn, address = await loop.sock_accept(self.sock)
            except OSError as exc:
                if exc.errno == errno.ECONNABORTED:
                    continue  # the client left before it was accepted
                # EMFILE and friends: the backlog waits while accepting pauses; never a flood of lines
                self._warnings.log(f"accept:{exc.errno}", "%s: cannot accept: %s", server, exc)
                await asyncio.sleep(ACCEPT_PAUSE_S)
                continue
            self._dispatch(conn, _client_address(address))

    def _dispatch(self, conn: socket.socket, client: str) -> None:
        refusal = self.gate.refusal(conn.fileno(), client)
        over_a_cap = refusal is not None and refusal[0] in ("server", "client")
        if (
            over_a_cap
            and self._make_room is not None
            and self._make_room(client if refusal[0] == "client" else None)
        ):
            refusal = None
        if refusal is not None:
            kind, reason = refusal
            self._warnings.log(f"refused:{kind}", "%s: connection from %s refused: %s",
                                   self.gate.server, client, reason)  # fmt: skip
            if self._on_refused is None or kind == "files":  # low on files: close, say nothing
                conn.close()
                return
            with contextlib.suppress(OSError):
                self._on_refused(conn, reason)
            if len(self.lingering) >= MAX_LINGERING:
                _close_read(conn)
                return
            task = asyncio.create_task(linger(conn), name=f"{self.gate.server}-refused")
            self.lingering.add(task)
            task.add_done_callback(self.lingering.discard)
            return
        self.gate.admit(client)
        with contextlib.suppress(OSError):
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        task = asyncio.create_task(self._serve(conn, client), name=f"{self.gate.server}-connection")
        self.connections.add(task)
        task.add_done_callback(self.connections.discard)

    async def _serve(self, conn: socket.socket, client: str) -> None:
        try:
            await self._on_connection(conn, client)
        finally:
            self.gate.release(client)
            conn.close()  # a no-op once the connection's transport closed it

    async def close(self) -> None:
        """Stop accepting and close the listening socket (open connections are the server's to end)."""
        if self._accepting is not None:
            self._accepting.cancel()
            await asyncio.gather(self._accepting, return_exceptions=True)
        for task in list(self.lingering):
            task.cancel()
        await asyncio.gather(*self.lingering, return_exceptions=True)
        self.sock.close()


async def linger(conn: socket.socket) -> None:
    """Close a refused connection gracefully: our FIN after the answer, then what the client still sends
    read and dropped until it closes or LINGER_S passes (closing with its bytes unread would reset it)."""
    loop = asyncio.get_running_loop()

    async def drain() -> None:
        while await loop.sock_recv(conn, 65536):
            pass

    try:
        conn.shutdown(socket.SHUT_WR)
        await asyncio.wait_for(drain(), LINGER_S)  # wait_for: see wyoming_events.read_event
    except (TimeoutError, OSError):
        pass
    finally:
        conn.close()


def _close_read(conn: socket.socket) -> None:
    """Close at once, after dropping what the client has sent so far: unread bytes would reset it."""
    with contextlib.suppress(OSError):
        while conn.recv(65536):
            pass
    conn.close()


def _client_address(address) -> str:
    """The client's IP address (the port is dropped: the per-client cap counts addresses)."""
    return str(address[0]) if isinstance(address, tuple) else str(address)
