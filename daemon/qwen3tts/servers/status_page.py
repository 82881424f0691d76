"""The status page: what the appliance is doing, and a form to make it speak, served by the HTTP server.

    GET  /status           the page (page/index.html, page.js, voices.js, page.css: no build step, nothing
                           external)
    GET  /status/state     JSON: the appliance's status, its recent events, the voices and priorities
    POST /status/announce  JSON {text, voice, priority} -> {"id"}: an announcement, played on the speaker
    /status/voices...      the voices: list, clone, delete, pick the default (voice_console.py)

Playing a text in the browser instead needs no route of its own: the page asks /v1/audio/speech.
The page is under the API's token and bind rules; a browser cannot send a bearer token, so with a token
it asks for a password (HTTP Basic, any user name, the token as password). Announcing changes what the
speaker says, so that route also refuses what a browser sends for another site: anything but a JSON body
(a cross-site form cannot send one without CORS, which this server never grants) and, without a token,
a Host other than a loopback name (DNS rebinding).

The appliance side is a `StatusConsole`: the service implements it (service/console.py). Its calls run on the
servers' thread and must only read, or hand over to the announcer's inbox.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from importlib import resources
from typing import Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from qwen3tts.errors import RequestError
from qwen3tts.servers.auth import is_loopback
from qwen3tts.servers.http_request import ApiError, read_json_body
from qwen3tts.servers.voice_console import VoiceConsole, voice_routes
from qwen3tts.text.checks import checked_text

PAGE_FILES = {"": ("index.html", "text/html; charset=utf-8"), "/page.js": ("page.js", "text/javascript"),
              "/voices.js": ("voices.js", "text/javascript"),
              "/page.css": ("page.css", "text/css")}  # fmt: skip
EVENT_KEPT = 50
CSP = "default-src 'self'; media-src 'self' blob:"
"""Everything from this server; the browser-played audio is a blob URL."""


class StatusConsole(VoiceConsole, Protocol):
    """What the status page reads from the running appliance and asks of it (voices: VoiceConsole)."""

    def console_status(self) -> dict:
        """The appliance's status (state, queue, current announcement, engine, thermal), JSON-ready."""

    def recent_events(self) -> list[dict]:
        """The last announcement events, oldest first, each with `seq`, `time`, `id`, `event`, `reason`."""

    priorities: tuple[str, ...]
    """The announcement levels a publisher may name, lowest first (the appliance's PA priorities)."""

    def announce(self, text: str, voice: str | None, priority: str) -> str:
        """Queue an announcement at the level named `priority` (one of `priorities`) on the appliance's
        speaker; its id, or RequestError with the reason."""


class RecentEvents:
    """The last `EVENT_KEPT` announcement events: appended on the announcer's thread, read on the servers'."""

    def __init__(self, keep: int = EVENT_KEPT):
        self._events: deque[dict] = deque(maxlen=keep)
        self._seq = itertools.count(1)
        self._lock = threading.Lock()

    def add(self, ann_id: str, event: str, reason: str = "") -> None:
        with self._lock:
            self._events.append({"seq": next(self._seq), "time": time.time(), "id": ann_id, "event": event,
                                 "reason": reason})  # fmt: skip

    def list(self) -> list[dict]:
        with self._lock:
            return list(self._events)


def status_routes(console: StatusConsole, gateway, max_body_bytes: int, read_timeout_s: float,
                  token: str | None) -> list:  # fmt: skip
    """The page's routes over `console`; `gateway` gives the voices and the text limit."""

    async def page(request: Request) -> Response:
        name, media_type = PAGE_FILES[request.url.path.removeprefix("/status")]
        body = resources.files("qwen3tts.servers").joinpath("page", name).read_bytes()
        headers = {"Cache-Control": "no-store", "Content-Security-Policy": CSP}
        return Response(body, media_type=media_type, headers=headers)

    async def state(request: Request) -> Response:
        offer = gateway.offer
        return JSONResponse({
            "status": console.console_status(), "events": console.recent_events(),
            "voices": list(offer.voice_names), "default_voice": offer.resolve_voice(None),
            "priorities": list(console.priorities),
        })  # fmt: skip

    async def announce(request: Request) -> Response:
        try:
            _check_same_site(request, token)
            body = await read_json_body(request, max_body_bytes, read_timeout_s)
            text, voice, priority = _announcement(body, gateway, console.priorities)
            return JSONResponse({"id": console.announce(text, voice, priority)})
        except RequestError as exc:
            return ApiError(400, str(exc), None, "rejected").response()
        except ApiError as exc:
            return exc.response()

    return [
        *(Route(f"/status{path}", page) for path in PAGE_FILES),
        Route("/status/state", state),
        Route("/status/announce", announce, methods=["POST"]),
        *voice_routes(console, token, max_body_bytes, read_timeout_s, check_host),
    ]


def _check_same_site(request: Request, token: str | None) -> None:
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise ApiError(415, "send the announcement as application/json", None, "unsupported_media_type")
    check_host(request, token)


def check_host(request: Request, token: str | None) -> None:
    """ApiError 403 when, without a token, the request names a Host that is not loopback (DNS rebinding)."""
    host = _host_name(request.headers.get("host", ""))
    if token is None and not is_loopback(host):
        raise ApiError(403, f"without a token the page only acts for a loopback Host, not {host[:64]!r}")


def _host_name(header: str) -> str:
    """The name or address of a Host header, without its port (`[::1]:8080` -> `::1`)."""
    if header.startswith("["):
        return header[1:].split("]")[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _announcement(body: dict, gateway, priorities: tuple[str, ...]) -> tuple[str, str | None, str]:
    text, voice, level = body.get("text"), body.get("voice") or None, body.get("priority") or "normal"
    if not isinstance(text, str):
        raise ApiError(400, "text must be a string", "text")
    text = checked_text(text, gateway.max_text_chars)
    if voice is not None and not isinstance(voice, str):
        raise ApiError(400, "voice must be a string", "voice")
    if level not in priorities:
        raise ApiError(400, f"priority must be one of: {', '.join(priorities)}", "priority")
    return text, voice, level
