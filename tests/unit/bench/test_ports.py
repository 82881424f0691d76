"""The free ports the tests and measuring scripts listen on stay out of the kernel's ephemeral range."""

import os
import socket
from pathlib import Path

from qwen3tts.bench.ports import free_port

EPHEMERAL_START = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_a_free_port_is_below_the_range_outgoing_connections_take_their_ports_from():
    ports = [free_port() for _ in range(20)]
    assert all(1024 < port < EPHEMERAL_START for port in ports), ports
    assert len(set(ports)) == len(ports)  # one process never hands out a port twice in a row


def test_ports_something_is_bound_to_are_skipped_and_the_one_given_can_be_bound():
    # Each process walks its stretch upwards from its last port: bind the next few and see them skipped.
    start = free_port()
    taken = []
    try:
        for port in range(start + 1, start + 4):
            sock = socket.socket()
            taken.append(sock)
            sock.bind(("127.0.0.1", port))
        given = free_port()
        assert given not in range(start + 1, start + 4)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", given))  # raises if the port was not free
    finally:
        for sock in taken:
            sock.close()


def test_a_forked_child_does_not_walk_its_parents_ports():
    free_port()
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its first port, to the parent
        os.write(writer, str(free_port()).encode())
        os._exit(0)
    os.close(writer)
    os.waitpid(child, 0)
    from_child = int(os.read(reader, 16))
    os.close(reader)
    # had the child gone on with the parent's walk, its first port would be the parent's next one
    assert from_child != free_port()


def test_where_the_ephemeral_range_starts_below_ours_the_kernel_picks(tmp_path, monkeypatch):
    from qwen3tts.bench import ports

    low = tmp_path / "ip_local_port_range"
    low.write_text("15000\t60999\n")
    monkeypatch.setattr(ports, "_RANGE_FILE", low)
    first, second = free_port(), free_port()  # neither bound in between: not one fixed port below the range
    assert first != second
