"""The OCI image from the same package: built by podman from the debootstrap base, Wyoming spoken to it.

No image registry is reachable: the base is the session's debootstrap root, imported with `podman
import`. Podman keeps its images and containers in the test's own directories (--root, and a short
--runroot in /tmp), so nothing is left in /var/lib/containers. Three settings this machine needs, and
why (also in docs/operations.md, "Container image"):
- `--runtime runc`: Debian's crun 1.8 refuses a hybrid cgroup layout ("cgroups in hybrid mode not
  supported, drop all controllers from cgroupv2");
- `--ulimit nofile=N:N --ulimit nproc=N:N` at the current limits: without CAP_SYS_RESOURCE the
  runtime cannot raise them to podman's defaults ("setrlimit `RLIMIT_NOFILE`: Operation not permitted");
- `--network host`: the test talks to the server on loopback, and needs no bridge set up.
"""

from __future__ import annotations

import asyncio
import resource
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize

from conftest import REPO
from qwen3tts.bench.ports import free_port

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def suite() -> str:
    """The image is bookworm's: its base root and package (conftest.py's `suite`, not parametrised here)."""
    return "bookworm"


def limits() -> list[str]:
    """Limits the runtime may set without CAP_SYS_RESOURCE: never above the current ones."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    nproc = min(4096, resource.getrlimit(resource.RLIMIT_NPROC)[0])  # the current 96363 was refused too
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    assert shutil.which("podman") and shutil.which("runc"), (
        "podman/runc missing: scripts/setup.sh installs them"
    )
    store = tmp_path_factory.mktemp("podman")
    # podman refuses a runroot of over 50 characters, which a pytest-xdist worker's tmp path is
    runroot = Path(tempfile.mkdtemp(prefix="qwen3tts-podman-"))

    def command(*args: str) -> list[str]:
        return ["podman", "--root", str(store / "root"), "--runroot", str(runroot),
                "--runtime", "runc", "--cgroup-manager", "cgroupfs", *args]  # fmt: skip

    def run(*args: str, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(command(*args), capture_output=True, text=True, timeout=timeout)
        if check:
            assert result.returncode == 0, f"{args[:2]}: {result.stdout[-2000:]}\n{result.stderr[-3000:]}"
        return result

    run.command = command
    yield run
    run("system", "reset", "--force", check=False)  # unmounts the overlay layers before tmp cleanup
    shutil.rmtree(runroot, ignore_errors=True)


@pytest.fixture(scope="module")
def image(podman, suite, debian_base, packages, tmp_path_factory) -> str:
    tar = subprocess.Popen(["tar", "-C", str(debian_base), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(
        podman.command("import", "-", f"localhost/qwen3tts-base:{suite}"),
        stdin=tar.stdout,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert imported.returncode == 0, f"podman import: {imported.stderr[-3000:]}"
    assert tar.wait() == 0
    context = tmp_path_factory.mktemp("image-context")
    shutil.copy(REPO / "packaging" / "image" / "Containerfile", context / "Containerfile")
    shutil.copy(packages.first, context / packages.first.name)
    podman(
        "build", "--network", "host", *limits(), "-t", "localhost/qwen3tts:test", str(context), timeout=1800
    )
    return "localhost/qwen3tts:test"


async def exchange(port: int, event, until: str) -> list:
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=120) as client:
        await client.write_event(event)
        received = []
        while True:
            reply = await client.read_event()
            assert reply is not None, f"connection closed after {[e.type for e in received]}"
            received.append(reply)
            if reply.type == until:
                return received


def wait_for_port(port: int, process: subprocess.Popen, log: Path, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(
        f"no Wyoming server on {port} after {seconds} s: {log.read_text(errors='replace')[-3000:]}"
    )


def bundle_in(data: Path, podman, image: str, releases, suite: str) -> None:
    """data/bundle: the tiny bundle test_fresh_root's box built when it ran, else one built in the image."""
    if suite in releases.bundles:
        shutil.copytree(releases.bundles[suite], data / "bundle")
        return
    data.mkdir()
    in_image = ["run", "--rm", "--network", "host", *limits(), "-v", f"{data}:/data", image]
    podman(*in_image[:-1], "--entrypoint", "/usr/bin/qwen3tts", image, "tiny", "/data/checkpoint")
    podman(
        *in_image[:-1],
        "--entrypoint",
        "/usr/bin/qwen3tts",
        image,
        "build",
        "--checkpoint",
        "/data/checkpoint",
        "--out",
        "/data/bundle",
    )


def test_the_image_serves_wyoming_to_the_wyoming_client_from_outside(
    podman, image, releases, suite, tmp_path
):
    data = tmp_path / "data"
    bundle_in(data, podman, image, releases, suite)
    port, broker_port = free_port(), free_port()  # nothing listens on broker_port: MQTT just retries
    log = tmp_path / "container.log"
    name = f"qwen3tts-test-{port}"
    with log.open("w") as out:
        server = subprocess.Popen(
            podman.command(
                "run",
                "--rm",
                "--name",
                name,
                "--network",
                "host",
                *limits(),
                "-v",
                f"{data}:/data",
                image,
                "--set",
                "servers.wyoming.host=127.0.0.1",
                "--set",
                f"servers.wyoming.port={port}",
                "--set",
                f"mqtt.port={broker_port}",
                "run",
            ),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, server, log)
        [event] = asyncio.run(exchange(port, Describe().event(), "info"))
        [program] = Info.from_event(event).tts
        assert program.name == "qwen3tts" and program.voices
        events = asyncio.run(exchange(port, Synthesize(text="Hello from the image.").event(), "audio-stop"))
        assert AudioStart.is_type(events[0].type) and AudioStop.is_type(events[-1].type)
        start = AudioStart.from_event(events[0])
        assert (start.rate, start.width, start.channels) == (24000, 2, 1)
        audio = b"".join(AudioChunk.from_event(e).audio for e in events[1:-1])
        assert len(audio) >= 2 * 1920 and audio.strip(b"\0")
    finally:
        podman("stop", "--time", "30", name, check=False)
        server.wait(timeout=60)
    assert server.returncode == 0, log.read_text(errors="replace")[-3000:]  # SIGTERM: a clean stop
