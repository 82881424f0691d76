"""Safe by default: who may bind where, and the bearer-token check.

Loopback binds are open (only local processes can connect). A non-loopback HTTP bind needs a token,
read from a file or systemd's credentials directory, never from the YAML. Wyoming cannot carry a token
(Home Assistant's Wyoming integration has no field for one), so a non-loopback Wyoming bind needs the
explicit `servers.wyoming.allow_network: true` and a firewall rule instead (docs/servers.md).
"""

from __future__ import annotations

import hmac
import ipaddress

from qwen3tts.errors import ConfigError


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'; every other name or address counts as the network."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name could resolve anywhere: treat it as the network


def check_http_bind(host: str, token: str | None) -> None:
    """ConfigError unless the HTTP server may bind `host` with this token (or lack of one)."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"servers.http.host: binding {host} (not loopback) requires a token: set "
            "servers.http.token_file or provide the systemd credential http-token"
        )


def check_wyoming_bind(host: str, allow_network: bool) -> None:
    """ConfigError unless the Wyoming server may bind `host`."""
    if not is_loopback(host) and not allow_network:
        raise ConfigError(
            f"servers.wyoming.host: binding {host} (not loopback) requires "
            "servers.wyoming.allow_network: true — Wyoming has no authentication, so firewall the port"
        )


def check_renderer_bind(host: str, allow_network: bool) -> None:
    """ConfigError unless the UPnP renderer may bind `host` (UPnP has no authentication either)."""
    if not is_loopback(host) and not allow_network:
        raise ConfigError(
            f"servers.renderer.host: binding {host} (not loopback) requires "
            "servers.renderer.allow_network: true — UPnP has no authentication, so firewall the port"
        )


def bearer_ok(header: str | None, token: str) -> bool:
    """Does an Authorization header carry exactly `token`? Compared in constant time."""
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != "bearer":
        given = ""
    return hmac.compare_digest(given.strip().encode("utf-8"), token.encode("utf-8"))
