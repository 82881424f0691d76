"""What every HTTP route shares: errors in OpenAI's shape, and the JSON body read under limits.

A body is read only up to `servers.max_body_bytes` (413 past it, before reading more when the client
declares its length) and within `servers.read_timeout_s` from its first byte (408), then checked the way
an MQTT payload is (text/checks.py): strict UTF-8, a JSON object nested at most 16 deep, numbers
bounded, no lone surrogates or control characters in any string. Every refusal is an `ApiError`: a 4xx
with a reason, never a 500 or a traceback.
"""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from qwen3tts.errors import RequestError
from qwen3tts.text.checks import InvalidText, decode_json_object, decode_text


class ApiError(Exception):
    """An HTTP error answer: status, message, and OpenAI's `param` and `code`."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def response(self, headers: dict[str, str] | None = None) -> JSONResponse:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        body = {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}
        return JSONResponse(body, status_code=self.status, headers=headers)


async def read_json_body(request: Request, max_bytes: int, timeout_s: float) -> dict:
    """The request's JSON object, or ApiError 400 / 408 / 413 with the reason."""
    data = await read_body(request, max_bytes, timeout_s)
    try:
        return decode_json_object(decode_text(data))
    except InvalidText as exc:
        param = exc.name.removeprefix("field ").strip("'") if exc.name.startswith("field ") else None
        raise ApiError(400, f"request body: {exc}", param, "invalid_text") from None
    except RequestError as exc:
        raise ApiError(400, f"request body: {exc}", None, "invalid_json") from None


async def read_body(request: Request, max_bytes: int, timeout_s: float) -> bytes:
    """The request's body, at most `max_bytes` and within `timeout_s`; ApiError 400 / 408 / 413."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ApiError(413, f"request body of {declared} bytes exceeds the limit of {max_bytes}", None,
                       "too_large")  # fmt: skip
    try:
        async with asyncio.timeout(timeout_s):
            return bytes(await _read_bounded(request, max_bytes))
    except TimeoutError:
        raise ApiError(408, f"the request body took longer than {timeout_s:g} s", None, "timeout") from None
    except ClientDisconnect:
        raise ApiError(400, "the client went away before its request body arrived") from None


async def _read_bounded(request: Request, max_bytes: int) -> bytearray:
    data = bytearray()
    async for part in request.stream():
        data += part
        if len(data) > max_bytes:
            raise ApiError(413, f"request body exceeds the limit of {max_bytes} bytes", None, "too_large")
    return data
