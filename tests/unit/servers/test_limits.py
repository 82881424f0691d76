"""The servers' shared connection limits (servers/limits.py): the throttled log, the gate's caps, the file
reserve, and the accept loop on real loopback sockets — over a cap, and with the process out of files."""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import subprocess
import sys
import textwrap

from qwen3tts.servers.limits import ConnectionGate, FileBudget, Listener, ThrottledLog
from qwen3tts.settings import ServersSettings


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_recurring_warning_is_logged_once_per_interval_with_how_often_it_recurred(caplog):
    clock = Clock()
    throttled = ThrottledLog(logging.getLogger("limits-test"), interval_s=60, clock=clock)
    with caplog.at_level(logging.WARNING, "limits-test"):
        logged = [throttled.log("accept", "cannot accept: %s", "EMFILE") for _ in range(1000)]
        clock.now += 61
        logged.append(throttled.log("accept", "cannot accept: %s", "EMFILE"))
        logged.append(throttled.log("other", "another condition"))
    assert logged.count(True) == 3
    assert [r.getMessage() for r in caplog.records] == [
        "cannot accept: EMFILE",
        "cannot accept: EMFILE (999 more in the last 61 s)",
        "another condition",
    ]


class Files:
    """A FileBudget stand-in with a fixed ceiling."""

    def __init__(self, limit: int, reserve: int):
        self.limit, self.reserve = limit, reserve

    def allows(self, fd: int) -> bool:
        return fd < self.limit - self.reserve


def test_the_gate_caps_connections_per_server_and_per_client_and_releases_them():
    caps = ServersSettings(max_connections=3, max_connections_per_client=2)
    gate = ConnectionGate("wyoming", caps, Files(1024, 64))
    for client in ("10.0.0.1", "10.0.0.1", "10.0.0.2"):
        assert gate.refusal(10, client) is None
        gate.admit(client)
    assert gate.refusal(10, "10.0.0.3")[0] == "server"
    gate.release("10.0.0.2")
    kind, text = gate.refusal(10, "10.0.0.1")
    assert kind == "client" and "2 connections from 10.0.0.1" in text
    assert gate.refusal(10, "10.0.0.3") is None
    assert gate.refusal(960, "10.0.0.3")[0] == "files"  # descriptor 960 is within the reserve of 64
    assert gate.refusal(959, "10.0.0.3") is None


def test_the_file_budget_raises_the_soft_limit_toward_what_the_servers_may_use():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    budget = FileBudget(reserve=64, wanted_connections=soft)  # more than fits under the soft limit now
    try:
        raised, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        assert raised > soft or soft == hard
        assert budget.limit == raised and budget.ceiling == raised - 64
        assert budget.allows(budget.ceiling - 1) and not budget.allows(budget.ceiling)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def _serve_and_connect(limits: ServersSettings, clients: int) -> tuple[list[bytes], int]:
    listening = socket.create_server(("127.0.0.1", 0))
    listening.setblocking(False)
    release = asyncio.Event()

    async def hold(conn: socket.socket, client: str) -> None:
        await release.wait()

    def refuse(conn: socket.socket, reason: str) -> None:
        conn.send(f"refused: {reason}\n".encode())

    listener = Listener(listening, ConnectionGate("test", limits, Files(1 << 20, 8)), hold, refuse)
    listener.start()
    port = listening.getsockname()[1]
    streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(clients)]
    answers = [await asyncio.wait_for(reader.read(200), 5) for reader, _ in streams[limits.max_connections :]]
    held = listener.gate.open
    release.set()
    for _, writer in streams:
        writer.close()
    await asyncio.wait(listener.connections, timeout=5)
    assert listener.gate.open == 0  # released on every path
    await listener.close()
    return answers, held


def test_connections_over_the_cap_are_told_why_and_closed_at_once():
    answers, held = asyncio.run(
        _serve_and_connect(ServersSettings(max_connections=3, max_connections_per_client=10), 6)
    )
    assert held == 3
    assert answers == [b"refused: 3 connections are open (servers.max_connections)\n"] * 3  # then EOF


FLOOD = textwrap.dedent(
    """
    import asyncio, logging, resource, socket, sys
    from qwen3tts.servers.limits import ConnectionGate, FileBudget, Listener
    from qwen3tts.settings import ServersSettings

    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    async def main():
        listening = socket.create_server(("127.0.0.1", 0), backlog=200)
        listening.setblocking(False)
        gate = ConnectionGate("flood", ServersSettings(max_connections=1000, max_connections_per_client=1000),
                              FileBudget(reserve=0, wanted_connections=0))
        async def hold(conn, client):
            await asyncio.sleep(3600)
        listener = Listener(listening, gate, hold)
        listener.start()
        port = listening.getsockname()[1]
        hog = []
        try:
            while True:  # use up every descriptor, so accept() fails with EMFILE
                hog.append(open("/dev/null"))
        except OSError:
            pass
        for f in hog[-20:]:  # 20 for client sockets, to connect with
            f.close()
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
        await asyncio.sleep(2.0)  # accept keeps failing meanwhile: EMFILE for every pending connection
        for f in hog[:10]:
            f.close()
        await asyncio.sleep(1.0)  # ten descriptors free: ten connections get accepted now
        print("ADMITTED", gate.open)

    asyncio.run(main())
    """
)


def test_accept_out_of_files_is_logged_once_and_accepting_resumes_when_files_free_up():
    result = subprocess.run([sys.executable, "-c", FLOOD], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    failures = [line for line in lines if "cannot accept" in line]
    assert len(failures) == 1 and "Too many open files" in failures[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert lines[-1] == "ADMITTED 10"
