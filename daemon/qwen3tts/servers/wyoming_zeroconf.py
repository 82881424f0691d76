"""The Wyoming server announced over mDNS (`_wyoming._tcp.local.`), so Home Assistant offers to add it.

Home Assistant's Wyoming integration browses for `_wyoming._tcp`, connects to the announced address
and port, asks `describe` and names the entry after the TTS program (`qwen3tts`). The announcement
carries the address the server is bound to and is made only on that address's interface: a loopback
bind is announced on loopback (Home Assistant on the same host finds it; nothing leaves the machine);
a wildcard bind (0.0.0.0) announces the address of the interface that routes to the mDNS group.

The `zeroconf` package does the protocol (probing, conflicts, answering queries, goodbye on stop).
wyoming's own helper (`wyoming.zeroconf`) always answers on every interface and announces a guessed
address, so it cannot keep a loopback server's announcement (or a test's) on loopback.
"""

from __future__ import annotations

import ipaddress
import logging
import socket

from zeroconf import BadTypeInNameException, IPVersion, NonUniqueNameException
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from qwen3tts.errors import ConfigError

log = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
MDNS_GROUP = "224.0.0.251"
MAX_NAME_BYTES = 63  # one DNS label
STOP_TIMEOUT_S = 3.0


def instance_name(configured: str | None) -> str:
    """The configured instance name, else `qwen3tts-<host name>`; ConfigError naming the key if unusable."""
    name = configured if configured is not None else f"qwen3tts-{socket.gethostname().split('.')[0]}"
    encoded = name.encode("utf-8", "replace")
    if not name.strip() or len(encoded) > MAX_NAME_BYTES or "." in name or not name.isprintable():
        raise ConfigError(
            f"servers.wyoming.zeroconf_name: {name[:80]!r} is not an mDNS instance name "
            f"(1 to {MAX_NAME_BYTES} bytes of printable text without dots)"
        )
    return name


def announced_address(host: str) -> str:
    """The IPv4 address to announce for a server bound to `host` (a wildcard: the outgoing interface's)."""
    if host in ("", "0.0.0.0", "::"):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            probe.connect((MDNS_GROUP, 5353))  # no packet is sent: this only asks the routing table
            return probe.getsockname()[0]
        finally:
            probe.close()
    if host == "localhost":
        return "127.0.0.1"
    address = ipaddress.ip_address(host)
    if address.version != 4:
        raise ConfigError(f"servers.wyoming.host: {host} is IPv6; the zeroconf announcement is IPv4 only")
    return str(address)


class ZeroconfAdvert:
    """One registered `_wyoming._tcp` service; start() and stop() run on the servers' loop."""

    def __init__(self, name: str, host: str, port: int):
        self.address = announced_address(host)
        self.info = AsyncServiceInfo(
            SERVICE_TYPE,
            f"{name}.{SERVICE_TYPE}",
            addresses=[socket.inet_aton(self.address)],
            port=port,
            properties={},
        )
        self._zeroconf: AsyncZeroconf | None = None

    async def start(self) -> None:
        """Probe for the name and announce it; failures are logged (the server works without it)."""
        try:
            self._zeroconf = AsyncZeroconf(interfaces=[self.address], ip_version=IPVersion.V4Only)
            broadcast = await self._zeroconf.async_register_service(self.info, allow_name_change=True)
            await broadcast  # the announcements after probing; stop() cancels this task if it still runs
        except (OSError, NonUniqueNameException, BadTypeInNameException) as exc:
            log.warning("wyoming: zeroconf announcement failed (%s); add the integration by address", exc)
            await self.stop()
            return
        log.info("wyoming: announced as %r on %s port %d (zeroconf)", self.info.name, self.address,
                 self.info.port)  # fmt: skip

    async def stop(self) -> None:
        """Say goodbye (the entry disappears from browsers at once) and close the mDNS sockets."""
        zeroconf, self._zeroconf = self._zeroconf, None
        if zeroconf is not None:
            try:
                await zeroconf.async_unregister_all_services()
            finally:
                await zeroconf.async_close()
