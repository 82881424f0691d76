"""The OpenAI-compatible HTTP API on Starlette (served by uvicorn; docs/servers.md says why).

POST /v1/audio/speech  {model, input, voice, response_format: wav|pcm, speed: 1.0, instructions, language}
                       -> the audio, streamed as the engine produces it (pcm: raw 24 kHz s16le mono)
GET  /v1/voices        -> the bundle's voices and languages
GET  /v1/models        -> the one model (the bundle)
GET  /healthz          -> {"status": "ready"} or {"status": "degraded", "reasons": [...]}
GET  /metrics          -> Prometheus text format
Errors use OpenAI's shape: {"error": {"message", "type", "param", "code"}}. With a token configured,
every route needs `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import json
import logging

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from qwen3tts.errors import RequestError
from qwen3tts.servers.auth import bearer_ok
from qwen3tts.servers.metrics import CONTENT_TYPE
from qwen3tts.servers.pcm import streaming_wav_header, to_s16le
from qwen3tts.servers.streams import Busy, InvalidField, SpeechStream, StreamPool

log = logging.getLogger(__name__)

FORMATS = {"wav": "audio/wav", "pcm": "audio/pcm"}
DEFAULT_FORMAT = "wav"  # OpenAI's default is mp3, which this server does not encode
PARAMS = {"text": "input", "voice": "voice", "language": "language"}  # InvalidField.field -> OpenAI param


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def response(self) -> JSONResponse:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        body = {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}
        return JSONResponse(body, status_code=self.status)


def build_app(pool: StreamPool, max_body_bytes: int, token: str | None) -> Starlette:
    """The ASGI application; `token` None means no authentication (loopback only, checked at start)."""

    async def speech(request: Request) -> Response:
        try:
            body = await _json_body(request, max_body_bytes)
            media_type, stream = _open_speech(pool, body)
        except ApiError as exc:
            return exc.response()
        header = streaming_wav_header(pool.offer.sample_rate) if media_type == FORMATS["wav"] else b""
        return _SpeechResponse(stream, header, media_type)

    async def voices(request: Request) -> Response:
        offer = pool.offer
        return JSONResponse({
            "voices": [{"id": name, "name": name} for name in offer.voice_names],
            "languages": ["auto", *offer.languages],
            "language_codes": list(offer.language_codes),
            "default_voice": offer.resolve_voice(None),
        })  # fmt: skip

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": pool.offer.name, "object": "model"}]})

    async def healthz(request: Request) -> Response:
        reasons = list(pool.metrics.figures().degraded)
        return JSONResponse({"status": "degraded" if reasons else "ready", "reasons": reasons})

    async def metrics(request: Request) -> Response:
        return Response(pool.metrics.render(), media_type=CONTENT_TYPE)

    app = Starlette(
        routes=[
            Route("/v1/audio/speech", speech, methods=["POST"]),
            Route("/v1/voices", voices),
            Route("/v1/models", models),
            Route("/healthz", healthz),
            Route("/metrics", metrics),
        ]
    )
    return _BearerAuth(app, token, pool) if token else app


def _open_speech(pool: StreamPool, body: dict) -> tuple[str, SpeechStream]:
    """Validate an OpenAI speech request and submit it; ApiError with the right status otherwise."""
    fmt = body.get("response_format") or DEFAULT_FORMAT
    if fmt not in FORMATS:
        raise ApiError(400, f"response_format {fmt!r} is not supported; use one of: {', '.join(FORMATS)}",
                       "response_format", "unsupported_format")  # fmt: skip
    speed = body.get("speed", 1.0)
    if isinstance(speed, bool) or not isinstance(speed, int | float) or speed != 1.0:
        raise ApiError(400, f"speed {speed!r} is not supported: this model speaks at its own pace; use 1.0",
                       "speed", "unsupported_speed")  # fmt: skip
    if body.get("stream_format", "audio") != "audio":
        raise ApiError(400, "only stream_format 'audio' is supported", "stream_format")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise ApiError(400, "model must be a string", "model")
    voice, language, instructions = (body.get(key) for key in ("voice", "language", "instructions"))
    for key, value in (("voice", voice), ("language", language), ("instructions", instructions)):
        if value is not None and not isinstance(value, str):
            raise ApiError(400, f"{key} must be a string", key)
    try:
        stream = pool.open("http", body.get("input"), voice, language, instructions)
    except Busy as exc:
        raise ApiError(429, str(exc), None, "busy") from exc
    except InvalidField as exc:
        raise ApiError(400, str(exc), PARAMS[exc.field]) from exc
    except RequestError as exc:  # the engine refused the text at submit
        raise ApiError(400, str(exc), "input") from exc
    return FORMATS[fmt], stream


async def _json_body(request: Request, max_bytes: int) -> dict:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ApiError(413, f"request body of {declared} bytes exceeds the limit of {max_bytes}")
    data = bytearray()
    async for part in request.stream():
        data += part
        if len(data) > max_bytes:
            raise ApiError(413, f"request body exceeds the limit of {max_bytes} bytes")
    try:
        body = json.loads(data)
    except ValueError as exc:
        raise ApiError(400, f"request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ApiError(400, "request body must be a JSON object")
    return body


class _SpeechResponse(StreamingResponse):
    """Streams a SpeechStream; however the response ends (done, client gone, error) the stream closes,
    which cancels its engine request at once."""

    def __init__(self, stream: SpeechStream, header: bytes, media_type: str):
        self.stream = stream
        self.header = header
        super().__init__(self._body(), media_type=media_type)

    async def _body(self):
        if self.header:
            yield self.header
        try:
            async for pcm in self.stream.pcm():
                yield to_s16le(pcm)
        except RequestError as exc:  # headers are gone: the stream ends early, the log says why
            log.error("%s: synthesis failed mid-stream: %s", self.stream.id, exc)
            self.stream.close("error")

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.stream.close()


class _BearerAuth:
    """ASGI wrapper: 401 unless `Authorization: Bearer <token>` matches (constant-time compare)."""

    def __init__(self, app, token: str, pool: StreamPool):
        self.app, self.token, self.pool = app, token, pool

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            if not bearer_ok(header, self.token):
                self.pool.metrics.requests.labels("http", "unauthorized").inc()
                response = ApiError(401, "missing or wrong bearer token", None, "invalid_api_key").response()
                response.headers["WWW-Authenticate"] = "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def start_http(sock, pool: StreamPool, max_body_bytes: int, token: str | None):
    """Serve the app with uvicorn on an already bound socket; returns the coroutine function that stops it."""
    import asyncio

    import uvicorn

    config = uvicorn.Config(
        build_app(pool, max_body_bytes, token),
        http="h11", ws="none", lifespan="off", loop="none", log_config=None, access_log=False,
        server_header=False, timeout_graceful_shutdown=2,
    )  # fmt: skip
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="http-server")
    while not server.started:
        if task.done():
            task.result()  # raises why uvicorn could not start
            raise RuntimeError("the HTTP server stopped during start-up")
        await asyncio.sleep(0.01)

    async def stop() -> None:
        server.should_exit = True
        await task

    return stop
