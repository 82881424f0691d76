"""What `qwen3tts doctor` says about the network servers: ports, binds, guards, and whether a port is free.

Pure reporting: nothing is served; a port is only bound for an instant to see whether it is free.
"""

from __future__ import annotations

import socket

from qwen3tts.doctor.check import Check
from qwen3tts.errors import ConfigError
from qwen3tts.servers.auth import check_http_bind, check_renderer_bind, check_wyoming_bind, is_loopback
from qwen3tts.settings import Settings, read_http_token

FIX = "see docs/servers.md: servers.*.host, allow_network, token_file"


def server_checks(settings: Settings, environ: dict[str, str] | None = None) -> list[Check]:
    """One line per server (Wyoming, HTTP, the renderer): disabled, or where it binds, what guards it, and
    whether the port is free."""
    config = settings.servers
    checks = []
    wyoming, http = config.wyoming, config.http
    if not wyoming.enabled:
        checks.append(
            Check("wyoming server", True, f"disabled (servers.wyoming.enabled; port {wyoming.port})")
        )
    else:
        guard = "loopback only" if is_loopback(wyoming.host) else "NETWORK, no authentication: firewall it"
        policy = lambda: check_wyoming_bind(wyoming.host, wyoming.allow_network)  # noqa: E731
        checks.append(_bind_check("wyoming", wyoming.host, wyoming.port, guard, policy))
    checks.append(_http_check(http, environ))
    renderer = config.renderer
    if not renderer.enabled:
        checks.append(
            Check("renderer server", True, f"disabled (servers.renderer.enabled; port {renderer.port})")
        )
    else:
        guard = "loopback only" if is_loopback(renderer.host) else "NETWORK, no authentication: firewall it"
        guard += ", SSDP on" if renderer.ssdp else ""
        policy = lambda: check_renderer_bind(renderer.host, renderer.allow_network)  # noqa: E731
        checks.append(_bind_check("renderer", renderer.host, renderer.port, guard, policy))
    return checks


def _http_check(http, environ: dict[str, str] | None) -> Check:
    if not http.enabled:
        return Check("http server", True, f"disabled (servers.http.enabled; port {http.port})")
    try:
        token = read_http_token(http, environ)
    except ConfigError as exc:
        return Check("http server", False, str(exc), FIX)
    guard = ("bearer token required" if token else "no token") + (
        "" if is_loopback(http.host) else ", on the network"
    )
    return _bind_check("http", http.host, http.port, guard, lambda: check_http_bind(http.host, token))


def _bind_check(name: str, host: str, port: int, guard: str, policy) -> Check:
    try:
        policy()
    except ConfigError as exc:
        return Check(f"{name} server", False, str(exc), FIX)
    free = port_is_free(host, port)
    state = "free" if free else "in use (by the running daemon, or another program)"
    return Check(f"{name} server", True, f"{host}:{port}, {guard}; port {state}")


def port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
