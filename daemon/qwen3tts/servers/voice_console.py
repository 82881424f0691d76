"""The status page's voice routes: list, clone, delete and pick the default voice, with no restart.

    GET    /status/voices          JSON: every voice (the bundle's, then the registered), the default, and
                                   whether this bundle can clone (and if not, why)
    PUT    /status/voices/{name}   the reference recording as the body (any format `voice add` reads),
                                   `?transcript=...` (URL-encoded UTF-8) or `?x_vector_only=true` -> 201
    DELETE /status/voices/{name}   a registered voice (not the default one)
    PUT    /status/default-voice   JSON {"voice": name}: the default, as MQTT `voice/set` sets it

A clone goes through `voice add`'s own code (runtime/voice_maker.py via the console), so it is checked the
same way. The upload is hostile input: the name is checked before a byte of the body is read; only an
audio type (or application/octet-stream) is taken; the body is bounded in size and time; one voice is made
at a time (a second is 429); the work runs in a thread, so the servers keep answering. Every refusal is a
4xx with the reason. PUT and DELETE are methods a page of another site cannot send here without a CORS
preflight, which this server never grants; without a token a non-loopback Host is refused (DNS rebinding).
Once the registry changed, the console reloads it into the voice catalog that the Wyoming `info`, the
OpenAI voice list and the MQTT intake all read, so every door offers the new voice at once.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import threading
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from qwen3tts.errors import AudioError, RequestError
from qwen3tts.servers.http_request import ApiError, read_body, read_json_body
from qwen3tts.voices.reference_audio import MAX_SECONDS, MIN_SECONDS
from qwen3tts.voices.registry import MAX_TRANSCRIPT_CHARS, VoiceError, validate_name

log = logging.getLogger(__name__)

MAX_UPLOAD_BYTES = 16 << 20
"""30 s of 48 kHz stereo float WAV is 11.5 MB; anything longer than `voice add` takes is refused anyway."""
UPLOAD_TIMEOUT_S = 60.0
"""16 MiB over a slow Wi-Fi link; a client that trickles its upload gives the slot back after this."""
DEFAULT_WAIT_S = 10.0
"""How long setting the default waits for the announcer to take it (it answers within one loop turn)."""
AUDIO_TYPES = ("audio/", "application/octet-stream")


class VoiceConsole(Protocol):
    """What the voice routes ask of the running appliance (the service's console). Blocking calls run in
    a worker thread; each refusal is a RequestError (VoiceError) or AudioError with the reason."""

    def voice_list(self) -> dict:
        """{"voices": [{"name", "kind", ...}], "default": name, "cloning": None or why not}."""

    def add_voice(self, name: str, audio: Path, transcript: str | None, x_vector_only: bool) -> dict:
        """Clone `name` from the recording at `audio` and offer it on every door; its list entry."""

    def remove_voice(self, name: str) -> None:
        """Delete the registered voice `name` and stop offering it."""

    def set_default_voice(self, name: str, timeout: float) -> str:
        """Make `name` the default voice; its spelling once the announcer took it."""


def voice_routes(console: VoiceConsole, token: str | None, max_body_bytes: int, read_timeout_s: float,
                 check_host) -> list:  # fmt: skip
    """The routes over `console`; `check_host(request, token)` raises ApiError for a Host to refuse."""
    handlers = VoiceHandlers(console, token, max_body_bytes, read_timeout_s, check_host)
    return [
        Route("/status/voices", handlers.listing),
        Route("/status/voices/{name}", handlers.add, methods=["PUT"]),
        Route("/status/voices/{name}", handlers.remove, methods=["DELETE"]),
        Route("/status/default-voice", handlers.default, methods=["PUT"]),
    ]


class VoiceHandlers:
    """The four voice routes' handlers over one console; each refusal is an ApiError's response."""

    def __init__(self, console: VoiceConsole, token: str | None, max_body_bytes: int, read_timeout_s: float,
                 check_host):  # fmt: skip
        self.console = console
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.read_timeout_s = read_timeout_s
        self.check_host = check_host
        self.adding = threading.Lock()  # one voice at a time: each compiles encoders and reads up to 16 MiB

    async def listing(self, request: Request) -> Response:
        voices = await asyncio.to_thread(self.console.voice_list)  # reads files: off the event loop
        return JSONResponse(voices | {"limits": LIMITS})

    async def add(self, request: Request) -> Response:
        try:
            self.check_host(request, self.token)
            name, transcript, x_vector_only = _clone_request(request)
            if not self.adding.acquire(blocking=False):
                raise ApiError(429, "another voice is being added; try again when it is done", None, "busy")
            try:
                data = await read_body(request, MAX_UPLOAD_BYTES, UPLOAD_TIMEOUT_S)
                if not data:
                    raise ApiError(400, "the request has no recording: send the audio file as its body")
                entry = await asyncio.to_thread(_add_from_bytes, self.console, name, data, transcript,
                                                x_vector_only)  # fmt: skip
            finally:
                self.adding.release()
            return JSONResponse(entry, status_code=201)
        except (RequestError, AudioError) as exc:
            return ApiError(400, str(exc), None, "rejected").response()
        except OSError as exc:  # the disk: full, read-only; the voice was not stored
            log.error("voice %s: could not be stored: %s", request.path_params["name"][:64], exc)
            return ApiError(507, f"the voice could not be stored: {exc.strerror or exc}").response()
        except ApiError as exc:
            return exc.response()

    async def remove(self, request: Request) -> Response:
        try:
            self.check_host(request, self.token)
            await asyncio.to_thread(self.console.remove_voice, request.path_params["name"])
            return JSONResponse({"removed": request.path_params["name"]})
        except VoiceError as exc:  # no registered voice of that name
            return ApiError(404, str(exc), None, "not_found").response()
        except RequestError as exc:  # the default voice
            return ApiError(409, str(exc), None, "conflict").response()
        except ApiError as exc:
            return exc.response()

    async def default(self, request: Request) -> Response:
        try:
            self.check_host(request, self.token)
            if _media_type(request) != "application/json":
                raise ApiError(415, "send the default voice as application/json", None,
                               "unsupported_media_type")  # fmt: skip
            voice = (await read_json_body(request, self.max_body_bytes, self.read_timeout_s)).get("voice")
            if not isinstance(voice, str) or not voice.strip():
                raise ApiError(400, "voice must be a voice name", "voice")
            chosen = await asyncio.to_thread(self.console.set_default_voice, voice.strip(), DEFAULT_WAIT_S)
            return JSONResponse({"default": chosen})
        except RequestError as exc:
            return ApiError(400, str(exc), "voice", "rejected").response()
        except TimeoutError:
            return ApiError(503, "the announcer did not take the new default in time; try again").response()
        except ApiError as exc:
            return exc.response()


LIMITS = {"max_bytes": MAX_UPLOAD_BYTES, "min_seconds": MIN_SECONDS, "max_seconds": MAX_SECONDS,
          "max_transcript_chars": MAX_TRANSCRIPT_CHARS}  # fmt: skip
"""What the page tells the operator before an upload (the checks themselves are voice add's)."""


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _clone_request(request: Request) -> tuple[str, str | None, bool]:
    """The name, transcript and mode of an upload, checked before its body is read."""
    name = validate_name(request.path_params["name"])
    media_type = _media_type(request)
    if not media_type.startswith(AUDIO_TYPES):
        given = media_type[:64] or "no Content-Type"
        raise ApiError(415, f"send the recording as an audio file (audio/wav, audio/flac, ...), not {given}",
                       None, "unsupported_media_type")  # fmt: skip
    try:
        query = parse_qs(request.scope["query_string"].decode("ascii"), keep_blank_values=True,
                         encoding="utf-8", errors="strict", max_num_fields=4)  # fmt: skip
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, f"the query string is not URL-encoded UTF-8: {exc}", "transcript") from None
    unknown = sorted(set(query) - {"transcript", "x_vector_only"})
    if unknown:
        raise ApiError(400, f"unknown parameter {unknown[0][:32]!r}: use transcript or x_vector_only")
    x_vector_only = query.get("x_vector_only", ["false"])[-1].lower() in ("1", "true", "yes", "on")
    transcript = query.get("transcript", [None])[-1]
    return name, transcript if transcript or not x_vector_only else None, x_vector_only


def _add_from_bytes(console: VoiceConsole, name: str, data: bytes, transcript: str | None,
                    x_vector_only: bool) -> dict:  # fmt: skip
    """Hand the upload to the console as a regular file of its own (voice add reads files), then remove it."""
    with tempfile.TemporaryDirectory(prefix="qwen3tts-voice-") as directory:
        path = Path(directory) / "upload"
        path.write_bytes(data)
        try:
            return console.add_voice(name, path, transcript, x_vector_only)
        except AudioError as exc:  # names the file: here a temporary one the operator never saw
            raise AudioError(str(exc).replace(str(path), "the recording")) from None
