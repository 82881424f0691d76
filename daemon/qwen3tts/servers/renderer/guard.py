"""What stands between the network and the UPnP services: every request is hostile until it is read.

A middleware around every route: the body must arrive within `read_timeout_s` and fit `max_body_bytes`
(aiohttp refuses more with 413); the controller's address is kept for the action (announce sources);
an exception a hostile body provokes in the library (a value it cannot coerce, an unexpected shape) is
one log line and a UPnP error, never a traceback that stops anything. SUBSCRIBE is bounded too: a
callback must be an http URL on the subscriber's own address (the renderer never sends events to a
third host), and a service keeps at most MAX_SUBSCRIBERS.
"""

from __future__ import annotations

import asyncio
import contextvars
import ipaddress
import logging
import time
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

from aiohttp import web

log = logging.getLogger(__name__)

MAX_SUBSCRIBERS = 16
MAX_SUBSCRIPTION_S = 1800
_CONTROLLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("renderer_controller", default=None)
_LOG_EVERY_S = 10.0


def controller_address() -> str | None:
    """The address of the controller whose request is being handled (inside an action)."""
    return _CONTROLLER.get()


class RequestGuard:
    """`middleware` for aiohttp; `subscribers(path)` counts the subscribers of the service at `path`."""

    def __init__(self, read_timeout_s: float, subscribers):
        self.read_timeout_s = read_timeout_s
        self.subscribers = subscribers
        self._last_logged: dict[str, float] = {}

    @web.middleware
    async def middleware(self, request: web.Request, handler):
        _CONTROLLER.set(request.remote)
        try:
            async with asyncio.timeout(self.read_timeout_s):
                await request.read()  # cached: the library's handlers read it again from memory
        except TimeoutError:
            return self._refuse(request, 408, "the body did not arrive in time")
        if request.method == "SUBSCRIBE":
            refusal = self._subscribe_refusal(request)
            if refusal:
                return self._refuse(request, 412, refusal)
        try:
            return await handler(request)
        except web.HTTPException as exc:  # the library's 400 for a body that is no SOAP call, our 404/405
            self._log(request, f"{exc.status} {exc.reason}")
            raise
        except Exception as exc:  # per-request isolation: a hostile request fails alone
            self._log(request, f"{type(exc).__name__}: {exc}"[:300])
            return upnp_error_response(402, "Invalid Args")

    def _subscribe_refusal(self, request: web.Request) -> str | None:
        if request.headers.get("SID"):
            return None  # a renewal: the library answers 412 for an unknown SID
        if self.subscribers(request.path) >= MAX_SUBSCRIBERS:
            return f"already {MAX_SUBSCRIBERS} subscribers"
        callback = request.headers.get("CALLBACK", "").strip()
        if not (callback.startswith("<") and callback.endswith(">")) or len(callback) > 512:
            return "no valid CALLBACK"
        parts = urlsplit(callback[1:-1].split(">", 1)[0])
        if parts.scheme != "http" or not _same_host(parts.hostname, request.remote):
            return "the CALLBACK must be an http URL on the subscriber's own address"
        timeout = request.headers.get("TIMEOUT", "").lower().removeprefix("second-")
        if not timeout.isdigit() or not 0 < int(timeout) <= MAX_SUBSCRIPTION_S:
            return f"TIMEOUT must be Second-1 .. Second-{MAX_SUBSCRIPTION_S}"
        return None

    def _refuse(self, request: web.Request, status: int, reason: str) -> web.Response:
        self._log(request, f"{status} {reason}")
        return web.Response(status=status, text=reason)

    def _log(self, request: web.Request, what: str) -> None:
        """One line per kind of refusal per 10 s: a flood does not flood the journal."""
        key = f"{request.method} {what[:40]}"
        now = time.monotonic()
        if now - self._last_logged.get(key, -_LOG_EVERY_S) >= _LOG_EVERY_S:
            self._last_logged[key] = now
            log.warning(
                "renderer: refused %s %s from %s: %s",
                request.method,
                request.path[:100],
                request.remote,
                what,
            )


def _same_host(hostname: str | None, remote: str | None) -> bool:
    try:
        return (
            hostname is not None
            and remote is not None
            and ipaddress.ip_address(hostname) == ipaddress.ip_address(remote)
        )
    except ValueError:
        return False  # a name in the callback: it could point anywhere


def upnp_error_response(code: int, description: str) -> web.Response:
    """A SOAP fault carrying a UPnPError, as control points expect it (UDA 1.1, 3.2.2)."""
    ns = "http://schemas.xmlsoap.org/soap/envelope/"
    envelope = ET.Element(
        "s:Envelope", {"xmlns:s": ns, "s:encodingStyle": "http://schemas.xmlsoap.org/soap/encoding/"}
    )
    fault = ET.SubElement(ET.SubElement(envelope, "s:Body"), "s:Fault")
    ET.SubElement(fault, "faultcode").text = "s:Client"
    ET.SubElement(fault, "faultstring").text = "UPnPError"
    error = ET.SubElement(
        ET.SubElement(fault, "detail"), "UPnPError", xmlns="urn:schemas-upnp-org:control-1-0"
    )
    ET.SubElement(error, "errorCode").text = str(code)
    ET.SubElement(error, "errorDescription").text = description
    body = ET.tostring(envelope, encoding="utf-8", xml_declaration=True)
    return web.Response(status=500, body=body, content_type="text/xml", charset="utf-8")
