"""Hostile HTTP input against the real server: every refusal a 4xx with the MQTT door's reason, never a
500 or a traceback, and every request's slot released (the active-request gauge back at 0) — for the
cases issue 27 found and for generated corpora of bodies and headers."""

from __future__ import annotations

import json
import logging
import socket
import time

import httpx
import pytest
from hostile_corpus import nasty_strings, payloads, values
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow
SPEECH_KEYS = ("input", "voice", "response_format", "speed", "instructions", "model", "language",
               "stream_format")  # fmt: skip
LOW_SURROGATE = '{"input": "a \\ud800 b"}'


def active(running) -> float:
    return running.servers.metrics.registry.get_sample_value("qwen3tts_network_active_requests")


def settled(running, timeout: float = 10.0) -> bool:
    """The gauge is back at 0 (a finished stream closes right after its last byte went out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if active(running) == 0:
            return True
        time.sleep(0.01)
    return False


@pytest.fixture(scope="module")
def running(serve_module):
    # tiny answers, and a short idle and read timeout so a fuzzed request that leaves the connection
    # open (keep-alive, a body that never comes) ends within seconds. Not 1 s for either: with the
    # packaging tests beside it on two vCPUs a 25-byte body once took longer to reach the handler (a 408),
    # and a client once took longer than 1 s between its connect and its request (closed as idle, no answer).
    return serve_module("engine.max_frames=2", "servers.idle_timeout_s=3", "servers.read_timeout_s=3")


def post(running, content: bytes, headers: dict | None = None) -> httpx.Response:
    headers = {"Content-Type": "application/json", **(headers or {})}
    return httpx.post(f"{running.http_url}/v1/audio/speech", content=content, headers=headers, timeout=30)


@pytest.mark.parametrize(
    ("body", "reason", "param"),
    [
        (LOW_SURROGATE, "field 'input' is not valid Unicode text (lone surrogate at character 2)", "input"),
        ('{"input": "a\\u0000b"}', "field 'input' contains a control character (U+0000 at character 1)",
         "input"),
        ('{"input": "\\u001b[31mred"}', "contains a control character (U+001B at character 0)", "input"),
        ('{"input": "\\u200b\\ufeff\\u200b"}', "text has nothing to speak (only invisible", "input"),
        ('{"input": "   "}', "empty text", "input"),
        ('{"input": "' + "word " * 500 + '"}', "text too long (2499 characters > 2000)", "input"),
        ('{"input": "hi", "x": ' + "[" * 30000 + "]" * 30000 + "}", "JSON nested deeper than 16", None),
        ('{"input": "hi", "response_format": ["wav"]}', "use one of: mp3, opus, aac, flac, wav, pcm",
         "response_format"),
        ('{"input": "hi", "response_format": {}}', "use one of: mp3, opus, aac, flac, wav, pcm",
         "response_format"),
        ('{"input": "hi", "speed": NaN}', "NaN is not a number this appliance accepts", None),
        ('{"input": "hi", "speed": 1' + "0" * 40 + "}", "number too long", None),
        ('["input", "hi"]', "JSON payload must be an object, got list", None),
        ('{"input": "hi"', "malformed JSON", None),
        ('{"input": 5}', "text must be a string", "input"),
        ('{"input": "hi", "instructions": "' + "b" * 2001 + '"}',  # MQTT's `instruct` rule (checked_instruct)
         "instructions too long (2001 characters > 2000)", "instructions"),
    ],
)  # fmt: skip
def test_issue_27_inputs_get_a_400_with_the_reason_and_release_everything(running, body, reason, param):
    before = len(running.handles)
    for _ in range(3):  # twice used to lock every client out: the slots leaked
        response = post(running, body.encode())
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert reason in error["message"] and error["param"] == param
        assert settled(running, timeout=1)
    assert len(running.handles) == before
    assert post(running, b'{"input": "Still here."}').status_code == 200


def test_invalid_utf8_and_encoded_surrogates_are_refused(running):
    for raw in (b'{"input": "\xff\xfe"}', b'{"input": "\xed\xa0\x80"}'):
        response = post(running, raw)
        assert response.status_code == 400 and "not valid UTF-8" in response.json()["error"]["message"]
    assert settled(running, timeout=1)


def test_the_same_reasons_as_the_mqtt_door(running):
    from qwen3tts.appliance.mqtt.payload import decode_json_object

    with pytest.raises(Exception) as mqtt:  # the message is what is compared
        decode_json_object('{"text": "a \\ud800 b"}')
    http = post(running, b'{"input": "a \\ud800 b"}').json()["error"]["message"]
    assert http.endswith(str(mqtt.value).replace("'text'", "'input'"))


speech_bodies = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(SPEECH_KEYS), nasty_strings), values, max_size=6).map(
        lambda obj: json.dumps(obj, ensure_ascii=True, allow_nan=True).encode()
    ),
    st.fixed_dictionaries({"input": nasty_strings}, optional={k: values for k in SPEECH_KEYS[1:]}).map(
        lambda obj: json.dumps(obj, ensure_ascii=True, allow_nan=True).encode()
    ),
    payloads,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])  # fmt: skip
@given(body=speech_bodies)
def test_generated_bodies_never_get_a_500_and_always_release_their_slot(running, body, caplog):
    with caplog.at_level(logging.WARNING):
        response = post(running, body)
    assert response.status_code in (200, 400, 413, 429), response.text
    if response.status_code != 200:
        assert response.json()["error"]["message"]
    assert settled(running)
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


header_names = st.one_of(
    st.sampled_from(["Content-Length", "Content-Type", "Transfer-Encoding", "Authorization", "Expect",
                     "Connection", "Host", "X-A"]),
    st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=":"), min_size=1,
            max_size=20),
)  # fmt: skip
header_values = st.one_of(
    st.sampled_from(["-1", "99999999999999999999", "chunked", "gzip, chunked", "100-continue", "close", "",
                     "Bearer \x00", "application/json; charset=utf-16"]),
    st.binary(max_size=40).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"").decode("latin-1")),
)  # fmt: skip


def final_status(answer: bytes) -> int:
    """The status of the final response: an `Expect: 100-continue` is first answered by an interim
    `100 Continue` (RFC 9110 15.2), which is a promise to read the body, not the answer to the request."""
    while True:
        status = int(answer.split(b" ", 2)[1])
        rest = answer.partition(b"\r\n\r\n")[2]
        if not 100 <= status < 200 or not rest:
            return status
        answer = rest


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])  # fmt: skip
@given(headers=st.lists(st.tuples(header_names, header_values), max_size=6), body=st.binary(max_size=80))
@example(headers=[("Expect", "100-continue")], body=b"")  # CI found it: an interim 100, then the 400
def test_generated_headers_get_an_answer_or_a_close_never_a_500_or_a_hang(running, headers, body, caplog):
    head = "".join(f"{name}: {value}\r\n" for name, value in headers)
    start = "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    request = f"{start}{head}\r\n".encode("latin-1") + body
    address = ("127.0.0.1", running.servers.http_port)
    with caplog.at_level(logging.WARNING), socket.create_connection(address, 10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)  # no more: a request waiting for more body must end, not hang
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    if answer:
        status = final_status(answer)
        assert 200 <= status < 500, answer[:200]
    assert settled(running)
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
