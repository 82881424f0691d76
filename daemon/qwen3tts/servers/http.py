"""The OpenAI-compatible HTTP API on Starlette (served by uvicorn; docs/servers.md says why).

POST /v1/audio/speech  OpenAI's speech request -> the audio, streamed as it is produced (http_speech.py)
GET  /v1/voices        -> the bundle's voices, languages, the OpenAI names mapped onto them
GET  /v1/audio/voices  -> {"voices": [names]} (the path Kokoro-FastAPI clients ask)
GET  /v1/models        -> in OpenAI's shape: the bundle, and OpenAI's speech model names (all accepted)
GET  /v1/models/{id}   -> one of them, or a 404 in OpenAI's shape
GET  /healthz          -> {"status": "ready"} or {"status": "degraded", "reasons": [...]}
GET  /metrics          -> Prometheus text format
GET  /status           -> the status page (status_page.py), when a console is given and it is enabled
Errors use OpenAI's shape: {"error": {"message", "type", "param", "code"}} (http_request.py). With a token
configured, every route needs `Authorization: Bearer <token>` (or HTTP Basic with the token as password,
which is what a browser can send). Connections are capped and timed (http_guard.py, limits.py).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import time

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from qwen3tts.servers.auth import bearer_ok
from qwen3tts.servers.gateway import Gateway
from qwen3tts.servers.http_request import ApiError, read_json_body
from qwen3tts.servers.http_speech import SpeechResponse, VoiceMap, open_speech
from qwen3tts.servers.limits import ConnectionGate, FileBudget, Listener
from qwen3tts.servers.metrics import CONTENT_TYPE
from qwen3tts.text.checks import quote

log = logging.getLogger(__name__)


def build_app(gateway: Gateway, config, token: str | None, console=None) -> Starlette:
    """The ASGI application for the `servers` settings `config`; `token` None means no authentication
    (loopback only, checked at start); `console` (status_page.StatusConsole) adds the status page."""
    voices = VoiceMap.from_settings(config.http.voice_map)

    async def speech(request: Request) -> Response:
        try:
            body = await read_json_body(request, config.max_body_bytes, config.read_timeout_s)
            order = open_speech(gateway, voices, body)
        except ApiError as exc:
            return exc.response()
        return SpeechResponse(order, gateway.offer.sample_rate, config.max_request_s)

    async def voice_list(request: Request) -> Response:
        offer = gateway.offer
        return JSONResponse({
            "voices": [{"id": name, "name": name} for name in offer.voice_names],
            "aliases": voices.aliases,
            "languages": ["auto", *offer.languages],
            "language_codes": list(offer.language_codes),
            "default_voice": offer.resolve_voice(None),
        })  # fmt: skip

    async def audio_voices(request: Request) -> Response:
        return JSONResponse({"voices": [*gateway.offer.voice_names, *voices.aliases]})

    listed = model_list(gateway.offer.name, int(time.time()))

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": listed})

    async def model(request: Request) -> Response:
        wanted = request.path_params["model"]
        found = next((entry for entry in listed if entry["id"] == wanted), None)
        if found is None:
            return ApiError(404, f"no model {quote(wanted, 64)}", "model", "model_not_found").response()
        return JSONResponse(found)

    async def healthz(request: Request) -> Response:
        reasons = list(gateway.metrics.figures().degraded)
        return JSONResponse({"status": "degraded" if reasons else "ready", "reasons": reasons})

    async def metrics(request: Request) -> Response:
        return Response(gateway.metrics.render(), media_type=CONTENT_TYPE)

    routes = [
        Route("/v1/audio/speech", speech, methods=["POST"]),
        Route("/v1/voices", voice_list),
        Route("/v1/audio/voices", audio_voices),
        Route("/v1/models", models),
        Route("/v1/models/{model:path}", model),
        Route("/healthz", healthz),
        Route("/metrics", metrics),
    ]
    if console is not None and config.http.status_page:
        from qwen3tts.servers.status_page import status_routes

        routes += status_routes(console, gateway, config.max_body_bytes, config.read_timeout_s, token)
    app = Starlette(routes=routes, exception_handlers={HTTPException: _openai_error})
    return _HeadLimit(_TokenAuth(app, token, gateway) if token else app)


async def _openai_error(request: Request, exc: HTTPException) -> Response:
    """Starlette's own refusals (no such path: 404, a method the path has not: 405) in OpenAI's error
    shape like every other answer, so an OpenAI client reads their reason instead of a parse error."""
    reason = f"{request.method} {quote(request.url.path, 80)}: {exc.detail}"
    code = "not_found" if exc.status_code == 404 else None
    return ApiError(exc.status_code, reason, None, code).response(exc.headers)


OPENAI_MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
"""OpenAI's speech model names, listed so clients that pick a model from /v1/models find theirs; any
`model` is accepted by /v1/audio/speech and every one speaks with the loaded bundle."""


def model_list(bundle: str, created: int) -> list[dict]:
    """/v1/models' entries, OpenAI's shape: the bundle first; `created` is when the server started."""
    names = dict.fromkeys((bundle, *OPENAI_MODELS))  # a bundle named like one is listed once
    return [{"id": name, "object": "model", "created": created, "owned_by": "qwen3tts"} for name in names]


MAX_HEAD_BYTES = 16 * 1024
"""Largest request head (its header lines). h11 refuses a longer head only while it is incomplete in its
buffer; one that arrives whole in a read is checked here."""


class _HeadLimit:
    """ASGI wrapper: 431 for a request whose headers add up to more than MAX_HEAD_BYTES."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            size = sum(len(name) + len(value) + 4 for name, value in scope["headers"])  # ": " and CRLF
            if size > MAX_HEAD_BYTES:
                reason = f"request headers of {size} bytes exceed the limit of {MAX_HEAD_BYTES}"
                await ApiError(431, reason, None, "too_large").response()(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _TokenAuth:
    """ASGI wrapper: 401 unless `Authorization` carries the token, as `Bearer <token>` or as the
    password of HTTP Basic (compared in constant time). The page's paths ask a browser for Basic."""

    def __init__(self, app, token: str, gateway: Gateway):
        self.app, self.token, self.gateway = app, token, gateway

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            basic = f"Bearer {_basic_password(header)}"
            if not (bearer_ok(header, self.token) or bearer_ok(basic, self.token)):
                self.gateway.metrics.requests.labels("http", "unauthorized").inc()
                response = ApiError(401, "missing or wrong bearer token", None, "invalid_api_key").response()
                page = scope["path"] == "/status" or scope["path"].startswith("/status/")
                response.headers["WWW-Authenticate"] = 'Basic realm="qwen3tts"' if page else "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _basic_password(header: str) -> str:
    """The password of an HTTP Basic `Authorization` header ('' for anything else)."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return ""
    try:
        return base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")[2]
    except (binascii.Error, UnicodeDecodeError):
        return ""


async def start_http(sock, gateway: Gateway, config, token: str | None, files: FileBudget, console=None):
    """Serve the app with uvicorn on connections the Listener accepts from the bound `sock`; returns the
    coroutine function that stops it."""
    import uvicorn

    from qwen3tts.servers.http_guard import Connections, GuardedProtocol, refuse

    uv_config = uvicorn.Config(
        build_app(gateway, config, token, console),
        http=GuardedProtocol, ws="none", lifespan="off", loop="none", log_config=None, access_log=False,
        server_header=False, timeout_graceful_shutdown=2, timeout_keep_alive=config.idle_timeout_s,
    )  # fmt: skip
    server = uvicorn.Server(uv_config)
    task = asyncio.create_task(server.serve(sockets=[]), name="http-server")  # no listener of its own
    while not server.started:
        if task.done():
            task.result()  # raises why uvicorn could not start
            raise RuntimeError("the HTTP server stopped during start-up")
        await asyncio.sleep(0.01)
    gate = ConnectionGate("http", config, files)
    connections = Connections(uv_config, server, config)
    listener = Listener(sock, gate, connections.connected, refuse, connections.make_room)
    listener.start()

    async def stop() -> None:
        await listener.close()
        server.should_exit = True
        await task

    return stop
