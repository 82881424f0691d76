"""A broker behind a lossy, slow link, all on loopback: a network namespace of the test's own.

mosquitto runs inside a fresh network namespace (`ip netns add`), listening on that namespace's
127.0.0.1 and on a Unix socket. The daemon under test runs in the namespace too (`in_netns()`) and
reaches the broker over the namespace's loopback, which `LossyLink` impairs: random loss with the
kernel's iptables `statistic` match (every packet to or from the broker's port), a rate limit with a
`tbf` qdisc (queueing delay), or a cut (every such packet dropped). The test's own clients use the
Unix socket, which no packet filter touches, so what they publish and record is exact.

This kernel has no `sch_netem` (CONFIG_NET_SCH_NETEM is not set), so neither `tc netem` loss nor a
fixed delay exist here; iptables loss plus a tbf rate limit are the nearest real thing. Needs root
(CI runs as root); a kernel without network namespaces is the only reason to skip.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from mosquitto_broker import free_port, mosquitto_binary

CHAIN = "QWEN3TTS_LOSSY"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


class Netns:
    """A network namespace with only `lo` (up); deleted by `delete()`, with whatever still runs in it."""

    def __init__(self) -> None:
        if not Path("/proc/self/ns/net").exists():
            pytest.skip("this kernel has no network namespaces (CONFIG_NET_NS)")
        for tool in ("ip", "iptables", "tc"):
            if shutil.which(tool) is None:
                pytest.fail(f"{tool} is not installed (apt-get install iproute2 iptables)", pytrace=False)
        self.name = f"qwen3tts-{os.getpid()}-{time.monotonic_ns() % 10**6}"
        made = _ip("netns", "add", self.name, check=False)
        if made.returncode != 0:
            pytest.fail(f"ip netns add failed (root needed): {made.stderr.strip()}", pytrace=False)
        # An Ethernet MTU: at lo's 64 KiB a TCP segment can be larger than the tbf bucket, which then drops
        # it every time it is sent again, and the connection stalls for good (not what a real link does).
        self.run("ip", "link", "set", "lo", "mtu", "1500", "up")

    def prefix(self) -> list[str]:
        """Prepend to a command to run it in the namespace (`ip netns exec` execs it: same pid)."""
        return ["ip", "netns", "exec", self.name]

    def run(self, *command: str) -> str:
        done = subprocess.run([*self.prefix(), *command], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} in {self.name}: {done.stderr.strip()}")
        return done.stdout

    def delete(self) -> None:
        _ip("netns", "delete", self.name, check=False)


class NetnsMosquitto:
    """mosquitto in `netns`: TCP on the namespace's 127.0.0.1:`port`, and the Unix socket `socket_path`."""

    def __init__(self, netns: Netns, workdir: Path) -> None:
        self.netns, self.workdir = netns, workdir
        self.host, self.port = "127.0.0.1", free_port()  # free in our namespace; the new one is empty
        self._sockdir = Path(tempfile.mkdtemp(prefix="qwen3tts-mqtt-"))  # Unix socket paths are short
        self.socket_path = str(self._sockdir / "mqtt.sock")
        self.config = workdir / "mosquitto.conf"
        self.config.write_text(
            f"listener {self.port} 127.0.0.1\nlistener 0 {self.socket_path}\nallow_anonymous true\n"
            f"persistence false\nuser {pwd.getpwuid(os.geteuid()).pw_name}\n"
        )
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        log = (self.workdir / "mosquitto.log").open("ab")
        command = [*self.netns.prefix(), mosquitto_binary(), "-c", str(self.config)]
        self.process = subprocess.Popen(command, stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.connect(self.socket_path)
                    return
            except OSError:
                time.sleep(0.02)
        self.stop()
        pytest.fail(f"mosquitto did not start: {(self.workdir / 'mosquitto.log').read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self._sockdir, ignore_errors=True)


class LossyLink:
    """Impairs every packet to or from the broker's TCP port inside the namespace."""

    def __init__(self, netns: Netns, port: int) -> None:
        self.netns, self.port = netns, port
        self._dropped = 0  # by rules flushed since
        netns.run("iptables", "-N", CHAIN)
        for way in ("--dport", "--sport"):
            netns.run("iptables", "-A", "INPUT", "-p", "tcp", way, str(port), "-j", CHAIN)

    def lossy(self, loss: float, rate_kbit: int) -> None:
        """Drop each packet with probability `loss`; queue at `rate_kbit` (delay grows with the burst)."""
        self._flush()
        self.netns.run("iptables", "-A", CHAIN, "-m", "statistic", "--mode", "random",
                       "--probability", f"{loss:.3f}", "-j", "DROP")  # fmt: skip
        self.netns.run("tc", "qdisc", "replace", "dev", "lo", "root", "tbf", "rate", f"{rate_kbit}kbit",
                       "burst", "16kb", "latency", "2s")  # fmt: skip

    def cut(self) -> None:
        """Drop every packet: the link is down, though no socket is told."""
        self._flush()
        self.netns.run("iptables", "-A", CHAIN, "-j", "DROP")

    def clear(self) -> None:
        self._flush()
        subprocess.run([*self.netns.prefix(), "tc", "qdisc", "del", "dev", "lo", "root"], capture_output=True)

    def dropped(self) -> int:
        """Packets dropped so far."""
        out = self.netns.run("iptables", "-L", CHAIN, "-v", "-x", "-n")
        return self._dropped + sum(int(line.split()[0]) for line in out.splitlines()[2:] if line.strip())

    def _flush(self) -> None:
        self._dropped = self.dropped()
        self.netns.run("iptables", "-F", CHAIN)
