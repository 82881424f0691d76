"""What every HTTP route shares (servers/http_request.py), called on a Starlette Request over a scripted
ASGI receive: the body read under its byte limit and deadline, the JSON checks, and the OpenAI-shaped
error answer. The HTTP server's own 408 and 413 over a real socket are in tests/integration/servers."""

import asyncio
import json

import pytest
from starlette.requests import Request

from qwen3tts.servers.http_request import ApiError, read_body, read_json_body


def request(parts: list[bytes], content_length: int | None = None, received: list | None = None) -> Request:
    """A POST whose body arrives in `parts`; `received` counts the receive calls."""
    parts, calls = list(parts), received if received is not None else []

    async def receive():
        calls.append(1)
        if parts:
            part = parts.pop(0)
            return {"type": "http.request", "body": part, "more_body": bool(parts)}
        return {"type": "http.disconnect"}

    headers = [] if content_length is None else [(b"content-length", str(content_length).encode())]
    return Request({"type": "http", "method": "POST", "headers": headers}, receive)


def refusal(coroutine) -> ApiError:
    with pytest.raises(ApiError) as refused:
        asyncio.run(coroutine)
    return refused.value


def test_a_body_in_several_parts_is_read_whole():
    assert asyncio.run(read_body(request([b"ab", b"cd", b"e"]), max_bytes=5, timeout_s=5)) == b"abcde"


def test_a_declared_length_over_the_limit_is_refused_before_reading_anything():
    received = []
    error = refusal(read_body(request([b"x" * 10], content_length=10, received=received), 9, 5))
    assert (error.status, error.code) == (413, "too_large")
    assert error.message == "request body of 10 bytes exceeds the limit of 9"
    assert received == []


def test_a_body_that_grows_past_the_limit_is_refused_without_a_declared_length():
    error = refusal(read_body(request([b"x" * 6, b"x" * 6, b"x" * 6]), max_bytes=10, timeout_s=5))
    assert (error.status, error.code, error.message) == (
        413,
        "too_large",
        "request body exceeds the limit of 10 bytes",
    )


def test_a_body_of_exactly_the_limit_is_taken():
    assert asyncio.run(read_body(request([b"x" * 10], content_length=10), 10, 5)) == b"x" * 10


def test_a_body_that_never_arrives_is_a_408_naming_the_deadline():
    async def never():
        await asyncio.Event().wait()  # the client sends headers and then nothing

    stalled = Request({"type": "http", "method": "POST", "headers": []}, never)
    error = refusal(read_body(stalled, max_bytes=10, timeout_s=0.05))
    assert (error.status, error.code, error.message) == (
        408,
        "timeout",
        "the request body took longer than 0.05 s",
    )


def test_a_client_that_leaves_before_its_body_is_a_400():
    error = refusal(read_body(request([]), max_bytes=10, timeout_s=5))
    assert error.status == 400 and "went away" in error.message


def test_a_json_object_body_is_decoded():
    body = json.dumps({"input": "Mind the gap.", "voice": "ryan"}).encode()
    assert asyncio.run(read_json_body(request([body]), 1000, 5)) == {
        "input": "Mind the gap.",
        "voice": "ryan",
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[1, 2]", "JSON payload must be an object, got list"),
        (b'{"input":', "malformed JSON"),
        (b"\xff{}", "not valid UTF-8"),
        (b'{"speed": 1e999}', "number out of range"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_a_400_invalid_json(body, message):
    error = refusal(read_json_body(request([body]), 1000, 5))
    assert (error.status, error.code, error.param) == (400, "invalid_json", None)
    assert error.message.startswith("request body: ") and message in error.message


def test_a_control_character_in_a_field_is_a_400_naming_that_field():
    error = refusal(read_json_body(request([b'{"input": "a\\u0007b"}']), 1000, 5))
    assert (error.status, error.code, error.param) == (400, "invalid_text", "input")
    assert "U+0007" in error.message


def test_an_api_error_answers_in_openais_shape():
    response = ApiError(413, "too big", "input", "too_large").response({"Retry-After": "1"})
    assert response.status_code == 413 and response.headers["retry-after"] == "1"
    assert json.loads(response.body) == {
        "error": {
            "message": "too big",
            "type": "invalid_request_error",
            "param": "input",
            "code": "too_large",
        }
    }


def test_a_5xx_api_error_is_a_server_error():
    body = json.loads(ApiError(503, "loading").response().body)
    assert body["error"] == {"message": "loading", "type": "server_error", "param": None, "code": None}
