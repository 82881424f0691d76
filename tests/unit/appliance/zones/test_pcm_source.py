"""Where a Snapcast zone's PCM goes (appliance/zones/pcm_source.py), against a real loopback listener
and a real FIFO instead of snapserver: the URI forms, per-announcement TCP connections, a FIFO opened
without a reader and kept open, and a reader that stops reading failing the write instead of hanging it.
A real snapserver is tests/integration/appliance/test_snapcast_zone.py."""

import os
import re
import socket

import pytest

from qwen3tts.appliance.zones.pcm_source import PcmSource, parse_source
from qwen3tts.errors import AudioError


@pytest.mark.parametrize(
    ("uri", "parsed"),
    [
        ("tcp://127.0.0.1:4955", ("tcp", "127.0.0.1", 4955)),
        ("tcp://snapserver.local", ("tcp", "snapserver.local", 4953)),
        ("pipe:///run/snapserver/zone", ("pipe", "/run/snapserver/zone", 0)),
    ],
)
def test_tcp_and_pipe_uris_are_parsed_with_snapservers_default_port(uri, parsed):
    assert parse_source(uri) == parsed


@pytest.mark.parametrize("uri", ["tcp://", "pipe://", "http://host:80", "/run/snapserver/zone", ""])
def test_any_other_source_is_an_audio_error_naming_it(uri):
    with pytest.raises(
        AudioError, match=re.escape(f"snapcast source {uri!r}: expected tcp://host:port or pipe:///path")
    ):
        PcmSource(uri)


@pytest.fixture
def listener():
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def read_all(conn: socket.socket) -> bytes:
    conn.settimeout(30)  # bounds a failure only: the data is there or EOF comes
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    return data


def test_tcp_sends_the_pcm_and_closes_the_connection_when_the_announcement_ends(listener):
    source = PcmSource(f"tcp://127.0.0.1:{listener.getsockname()[1]}")
    source.open(probe=b"ignored for tcp")
    conn, _ = listener.accept()
    source.write(b"\x01\x00" * 1000)
    source.release()
    assert not source.is_open
    assert read_all(conn) == b"\x01\x00" * 1000  # then EOF: the connection is per announcement
    conn.close()


def test_each_announcement_opens_a_new_tcp_connection(listener):
    source = PcmSource(f"tcp://127.0.0.1:{listener.getsockname()[1]}")
    for payload in (b"first", b"second"):
        source.open()
        conn, _ = listener.accept()
        source.write(payload)
        source.release()
        assert read_all(conn) == payload
        conn.close()


def test_a_snapserver_that_does_not_listen_is_an_os_error_at_open():
    bound = socket.socket()
    bound.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    try:
        source = PcmSource(f"tcp://127.0.0.1:{bound.getsockname()[1]}")
        with pytest.raises(ConnectionRefusedError):
            source.open()
        assert not source.is_open
    finally:
        bound.close()


def test_a_fifo_opens_without_a_reader_writes_the_probe_and_stays_open_between_announcements(tmp_path):
    fifo = tmp_path / "zone"
    os.mkfifo(fifo)
    source = PcmSource(f"pipe://{fifo}")
    source.open(probe=b"\x00\x00" * 4)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        source.write(b"pcm")
        source.release()
        assert source.is_open  # a FIFO stays open: snapserver's reader never sees end-of-file
        source.open(probe=b"!")  # the next announcement reuses it
        assert os.read(reader, 100) == b"\x00\x00" * 4 + b"pcm!"
    finally:
        source.close()
        os.close(reader)
    assert not source.is_open


def test_a_fifo_nobody_reads_fails_the_write_within_the_timeout_instead_of_hanging(tmp_path):
    fifo = tmp_path / "zone"
    os.mkfifo(fifo)
    source = PcmSource(f"pipe://{fifo}", timeout=0.05)
    source.open()
    try:
        with pytest.raises(TimeoutError, match=re.escape(f"snapserver stopped reading {fifo}")):
            source.write(b"\x00" * (4 * 1024 * 1024))  # far more than a pipe buffers
    finally:
        source.close()


def test_a_missing_fifo_is_an_os_error_at_open(tmp_path):
    source = PcmSource(f"pipe://{tmp_path / 'absent'}")
    with pytest.raises(FileNotFoundError):
        source.open()
    assert not source.is_open


def test_writing_to_a_source_that_is_not_open_is_an_os_error(tmp_path):
    with pytest.raises(OSError, match="the snapcast source is not open"):
        PcmSource(f"pipe://{tmp_path / 'zone'}").write(b"pcm")
