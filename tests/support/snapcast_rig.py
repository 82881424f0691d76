"""A real snapserver and real snapclients on loopback, started by the test and stopped by pid.

`Snapserver` writes a config with free loopback ports (stream, JSON-RPC) and three streams: `music` (a
FIFO a `Music` thread feeds with a steady tone in real time), `announcements` (a `tcp://` source in server
mode, what a zone streams into) and `announcements_pipe` (the same as a `pipe://` source), all
48000:16:2 PCM with the default 1000 ms buffer. `Snapclient` runs `snapclient --player file` (append mode),
which writes what it would play to a raw file in real time, 50 ms at a time, silence while its group's
stream is idle; it starts a new player (a jump in the file's timeline) whenever its group changes stream.
`Timeline` maps a position in such a file to the monotonic time it was played, from the file's growth.
`restart()` keeps the ports. Missing binaries fail the test: CI installs them (scripts/setup.sh).
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from mosquitto_broker import free_port, wait_for_port

RATE = 48000
MUSIC_HZ = 220.0


def binary(name: str) -> str:
    path = shutil.which(name) or f"/usr/bin/{name}"
    if not Path(path).exists():
        pytest.fail(
            f"{name} is not installed (apt-get install {name}); the Snapcast tests need it", pytrace=False
        )
    return path


def stop_process(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Snapserver:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.stream_port, self.control_port, self.tcp_source_port = free_port(), free_port(), free_port()
        self.music_fifo = workdir / "music"
        self.pipe_fifo = workdir / "announcements.fifo"
        self.config = workdir / "snapserver.conf"
        self.config.write_text(
            "[server]\n"
            f"datadir = {workdir}\n"
            "[http]\nenabled = false\n"
            f"[tcp]\nenabled = true\nbind_to_address = 127.0.0.1\nport = {self.control_port}\n"
            f"[stream]\nbind_to_address = 127.0.0.1\nport = {self.stream_port}\n"
            f"source = pipe://{self.music_fifo}?name=music&mode=create\n"
            f"source = tcp://127.0.0.1:{self.tcp_source_port}?name=announcements&mode=server\n"
            f"source = pipe://{self.pipe_fifo}?name=announcements_pipe&mode=create\n"
            "sampleformat = 48000:16:2\ncodec = pcm\nbuffer = 1000\n"
            f"[logging]\nsink = file:{workdir}/snapserver.log\n"
        )
        self.process: subprocess.Popen | None = None

    @property
    def tcp_source(self) -> str:
        return f"tcp://127.0.0.1:{self.tcp_source_port}"

    @property
    def pipe_source(self) -> str:
        return f"pipe://{self.pipe_fifo}"

    def start(self) -> None:
        out = (self.workdir / "snapserver.out").open("ab")
        env = {"HOME": str(self.workdir), "PATH": "/usr/bin:/bin"}  # its server.json goes to the workdir
        self.process = subprocess.Popen([binary("snapserver"), "-c", str(self.config)], stdout=out,
                                        stderr=out, env=env)  # fmt: skip
        try:
            wait_for_port(self.control_port, timeout=10)
            wait_for_port(self.tcp_source_port, timeout=10)
        except TimeoutError:
            self.stop()
            pytest.fail(f"snapserver did not start: {(self.workdir / 'snapserver.log').read_text()[-2000:]}")

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


class Snapclient:
    """`snapclient --player file`: what this client would play, in a raw 48 kHz 16-bit stereo file."""

    def __init__(self, server: Snapserver, host_id: str) -> None:
        self.server, self.host_id = server, host_id
        self.output = server.workdir / f"{host_id}.raw"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        log = self.server.workdir / f"{self.host_id}.log"
        self.process = subprocess.Popen(
            [binary("snapclient"), "-h", "127.0.0.1", "-p", str(self.server.stream_port), "--hostID",
             self.host_id, "--player", f"file:filename={self.output},mode=a", "--logsink", f"file:{log}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None

    def frames(self) -> int:
        """Stereo frames written so far (it writes in real time)."""
        with contextlib.suppress(FileNotFoundError):
            return self.output.stat().st_size // 4
        return 0

    def mono(self) -> np.ndarray:
        """Everything it played so far, the left channel as float32."""
        raw = np.frombuffer(self.output.read_bytes(), dtype="<i2")
        return raw[: len(raw) // 2 * 2].reshape(-1, 2)[:, 0].astype(np.float32) / 32767.0


class Timeline:
    """Polls the clients' file sizes every millisecond (a thread) to tell when a file position played.

    The file player writes 50 ms every 50 ms, so `t - frames / RATE` at the last poll before a write is
    the time of the file's frame 0 for the current player, to about a millisecond. Each write gives one
    such origin; the origin is their median over the window. Not their largest: a write the scheduler
    delays (a loaded machine) gives a later origin for that write alone, and the largest of them followed
    that one delay (a burst read 44 ms apart by two clients in step, with the packaging tests beside).
    """

    def __init__(self, clients: list[Snapclient]) -> None:
        self.clients = clients
        self.polls: list[tuple[float, list[int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="timeline", daemon=True)

    def start(self) -> Timeline:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.polls.append((time.monotonic(), [c.frames() for c in self.clients]))
            time.sleep(0.001)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def played_at(self, client: Snapclient, frame: int, window: tuple[float, float]) -> float:
        """Monotonic time `client` played file frame `frame`, from the polls inside `window`."""
        index = self.clients.index(client)
        polls = [(t, frames[index]) for t, frames in self.polls if window[0] <= t <= window[1]]
        if len(polls) < 50:
            raise AssertionError(f"too few polls of {client.host_id} in the window: {len(polls)}")
        last_before_write: dict[int, float] = {}  # file size -> the origin its last poll gives
        for t, size in polls:
            last_before_write[size] = t - size / RATE
        return statistics.median(last_before_write.values()) + frame / RATE


class Music:
    """A thread feeding the `music` stream a steady tone in real time, until `stop()`."""

    def __init__(self, server: Snapserver, amplitude: float = 0.3) -> None:
        self.server, self.amplitude = server, amplitude
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="music", daemon=True)

    def start(self) -> Music:
        self._thread.start()
        return self

    def _run(self) -> None:
        chunk, n = RATE // 50, 0  # 20 ms
        fifo = None
        next_at = time.monotonic()
        while not self._stop.is_set():
            if fifo is None:
                with contextlib.suppress(OSError):
                    fifo = open(self.server.music_fifo, "wb", buffering=0)  # noqa: SIM115 - kept open
                if fifo is None:
                    time.sleep(0.05)
                    continue
            t = (np.arange(chunk) + n) / RATE
            tone = (self.amplitude * np.sin(2 * np.pi * MUSIC_HZ * t) * 32767).astype("<i2")
            try:
                fifo.write(np.repeat(tone, 2).tobytes())
            except OSError:  # snapserver restarted: open the FIFO again
                fifo = None
                continue
            n += chunk
            next_at += chunk / RATE
            time.sleep(max(0.0, next_at - time.monotonic()))
        if fifo is not None:
            with contextlib.suppress(OSError):
                fifo.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def music_level(samples: np.ndarray) -> float:
    """How much of the music tone is in `samples` (its amplitude at MUSIC_HZ)."""
    if len(samples) == 0:
        return 0.0
    t = np.arange(len(samples)) / RATE
    return float(2 * abs(np.mean(samples * np.exp(-2j * np.pi * MUSIC_HZ * t))))


def locate(haystack: np.ndarray, needle: np.ndarray) -> tuple[int, float]:
    """(offset, normalised correlation) of the best match of `needle` in `haystack` (FFT correlation)."""
    n = len(haystack) + len(needle)
    size = 1 << (n - 1).bit_length()
    corr = np.fft.irfft(np.fft.rfft(haystack, size) * np.conj(np.fft.rfft(needle, size)), size)[
        : len(haystack)
    ]
    offset = int(np.argmax(corr))
    window = haystack[offset : offset + len(needle)]
    norm = float(np.linalg.norm(window) * np.linalg.norm(needle)) or 1.0
    return offset, float(corr[offset]) / norm


@contextlib.contextmanager
def running_rig(workdir: Path, names: tuple[str, ...] = ("left", "right")):
    """A started snapserver, one started `Snapclient` per name and the music playing; all stopped after."""
    server = Snapserver(workdir)
    server.start()
    clients = [Snapclient(server, name) for name in names]
    for client in clients:
        client.start()
    music = Music(server).start()
    try:
        yield server, clients
    finally:
        music.stop()
        for client in clients:
            client.stop()
        server.stop()


def wait_until(condition, timeout: float = 10.0) -> None:
    """Polls `condition` every 50 ms (the rig's processes give no event to wait on); fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)
