"""The hostile matrix's network rows (scripts/hostile_matrix.py): hostile HTTP bodies and protocol abuses,
the backtracking lexicon's texts, and idle Wyoming sockets under the daemon's file limit."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from collections import Counter

import httpx
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe

from matrix_mqtt import SUPPORT
from qwen3tts.bench.matrix_tally import Row, count_ends, tally

HANG_S = 60.0
"""Longer than any of the daemon's own limits (read 10 s, idle 30 s): a request unanswered by then hangs."""
SPEECH = "/v1/audio/speech"


def post(body: bytes, extra: str = "", content_type: str = "application/json", length=None) -> bytes:
    size = len(body) if length is None else length
    head = (f"POST {SPEECH} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: {content_type}"
            f"\r\nContent-Length: {size}\r\n{extra}\r\n")  # fmt: skip
    return head.encode("latin-1") + body


def chunked(extra: str, chunks: bytes) -> bytes:
    head = f"POST {SPEECH} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json"
    return (f"{head}\r\n{extra}\r\n").encode("latin-1") + chunks


BODIES = [
    '{"input": "a \\ud800 b"}', '{"input": "a\\u0000b"}', '{"input": "\\u001b[31mred"}',
    '{"input": "\\u200b\\ufeff\\u200b"}', '{"input": "   "}', '{"input": "' + "word " * 500 + '"}',
    '{"input": "hi", "x": ' + "[" * 30000 + "]" * 30000 + "}", '{"input": "hi", "response_format": ["wav"]}',
    '{"input": "hi", "response_format": {}}', '{"input": "hi", "speed": NaN}',
    '{"input": "hi", "speed": 1' + "0" * 40 + "}", '["input", "hi"]', '{"input": "hi"', '{"input": 5}',
    '{"input": "hi", "instructions": "' + "b" * 2001 + '"}', '{"input": "hi", "speed": 1e309}',
    '{"input": "hi", "speed": -1}', '{"input": "hi", "speed": 1000}', '{"input": "hi", "voice": "nobody"}',
    '{"input": "hi", "response_format": "exe"}', '{"input": "hi", "stream_format": "sse"}',
    '{"input": "hi", "language": "xx"}', '{"input": "hi", "model": 5}', '{"input": ["a", "b"]}',
    '{"input": "a", "input": 7}', "", "null", '{"input": "' + "x" * 70_000 + '"}',
]  # fmt: skip
RAW = [
    (post(b'{"input": "\xff\xfe"}'), False),
    (post(b'{"input": "\xed\xa0\x80"}'), False),
    (post(b'{"input": "hi"}', length=100), True),
    (post(b'{"input": "hi"}', length=-1), False),
    (post(b'{"input": "hi"}', length=99999999999999999999), False),
    (post(b'{"input": "hi"}', "Content-Length: 3\r\n"), False),
    (post(b'{"input": "hi"}', "Transfer-Encoding: chunked\r\n"), False),
    (chunked("Transfer-Encoding: chunked\r\n", b"zz\r\nhello\r\n0\r\n\r\n"), False),
    (chunked("Transfer-Encoding: chunked\r\n", b'10\r\n{"input": "Yes."}\r\n0\r\n\r\n'), False),
    (chunked("Transfer-Encoding: gzip, chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n"), False),
    (chunked("Transfer-Encoding: chunked\r\n", b"5;" + b"e" * 20000 + b"\r\nhello\r\n0\r\n\r\n"), False),
    (post(b'{"input": "hi"}', "X-Big: " + "a" * 20_000 + "\r\n"), False),
    (post(b'{"input": "hi"}', "".join(f"X-H{i}: v\r\n" for i in range(200))), False),
    (b"GARBAGE\r\n\r\n", False),
    (b"GET / HTTP/9.9\r\nHost: x\r\n\r\n", False),
    (b"GET /\r\n", False),
    (b"PATCH /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", False),
    (b"GET /v1/audio/speech HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", False),
    (b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", False),
    (b"GET /v1/%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", False),
    (b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", False),
    (post(b"", "Expect: 100-continue\r\n"), False),
    (post(b'{"input": "hi"}', content_type="text/plain"), False),
    (post('{"input": "hi"}'.encode("utf-16"), content_type="application/json; charset=utf-16"), False),
    (post(b'{"input": "hi"}', "Content-Encoding: gzip\r\n"), False),
    (post(b'{"input": "hi"}', "Upgrade: websocket\r\nConnection: Upgrade\r\n"), False),
    (post(b'{"input": "hi"}', "Authorization: Bearer \x00\x01\r\n"), False),
    (post(b'{"input": "hi"}', "X\x00Bad: v\r\n"), False),
    (b'POST /v1/audio/speech HTTP/1.1\r\nContent-Length: 15\r\n\r\n{"input": "hi"}', False),
    (
        b"POST http://evil.example/v1/audio/speech HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n"
        b'Content-Length: 15\r\n\r\n{"input": "hi"}',
        False,
    ),
    (
        b"OPTIONS /v1/audio/speech HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.example\r\n"
        b"Connection: close\r\nAccess-Control-Request-Method: PUT\r\n\r\n",
        False,
    ),
    (b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Len", False),  # the rest never comes
    (post(b'{"input": "hi"', length=100), False),  # nor the rest of the body
]
"""(request, whether to half-close after it). Only the first short body half-closes: a client that shuts
its side is taken for gone, so a valid request half-closed is dropped unanswered (uvicorn's disconnect),
and a request still waiting for bytes must end by the daemon's own read timeout (408), not by our EOF."""
PIPELINED = (post(b'{"input": "One."}').replace(b"Connection: close\r\n", b"") + post(b'{"input": 5}'), False)
"""Two requests in one write, the second closing: two answers."""


def generated(count: int) -> list[bytes]:
    """`count` bodies from the suite's hostile corpus, the same ones on every run."""
    sys.path.insert(0, str(SUPPORT))
    from hostile_corpus import payloads
    from hypothesis import HealthCheck, Phase, given, settings

    found: list[bytes] = []

    @settings(max_examples=max(count, 1), database=None, derandomize=True, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(payloads)
    def take(payload: bytes) -> None:
        found.append(payload)

    take()
    return found[:count]


def exchange(port: int, raw: bytes, shut: bool) -> tuple[bytes, bool]:
    """Send `raw`, read until the server closes; (what came back, whether it hung)."""
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_S) as sock:
        try:
            sock.sendall(raw)
            if shut:
                sock.shutdown(socket.SHUT_WR)  # no more: a request waiting for more must end, not hang
        except OSError:  # the server answered and closed before it took all of it: read what it said
            pass
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except TimeoutError:
            return answer, True
        except ConnectionResetError:
            pass
    return answer, False


def responses(answer: bytes) -> list[tuple[int, bytes]]:
    """(status, body) of each final response in `answer` (interim 1xx left out)."""
    found = []
    while answer.startswith(b"HTTP/"):
        head, _, rest = answer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        headers = {
            k.strip().lower(): v.strip() for k, _, v in (h.partition(b":") for h in head.split(b"\r\n")[1:])
        }
        if 100 <= status < 200:
            answer = rest
            continue
        if b"content-length" in headers:
            size = int(headers[b"content-length"])
            body, answer = rest[:size], rest[size:]
        elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            body, answer = _dechunked(rest)
        else:
            body, answer = rest, b""
        found.append((status, body))
    return found


def _dechunked(rest: bytes) -> tuple[bytes, bytes]:
    """A chunked body and what follows it (a pipelined response); all of `rest` if it does not end."""
    body = b""
    while True:
        line, _, rest = rest.partition(b"\r\n")
        try:
            size = int(line.split(b";")[0], 16)
        except ValueError:
            return body + rest, b""
        if size == 0:
            return body, rest.partition(b"\r\n")[2]  # past the (empty) trailer
        body, rest = body + rest[:size], rest[size + 2 :]


def hostile_requests(daemon, count: int):
    """Each case on its own connection: answered (a status line) or closed; a 500 or a hang is a failure."""
    cases = [(post(b.encode("utf-8", "surrogatepass")), False) for b in BODIES] + RAW + [PIPELINED]
    cases = cases[:count] + [(post(b), False) for b in generated(max(0, count - len(cases)))]
    statuses, not_json, failures, ends, details = Counter(), [], [], {}, []
    for n, (raw, shut) in enumerate(cases):
        answer, hung = exchange(daemon.http_port, raw, shut)
        finals = responses(answer)
        expected = 2 if (raw, shut) == PIPELINED else 1
        ends[f"h{n}"] = 0 if hung else (len(finals) or expected)  # closed without a word is an answer
        for status, body in finals:
            statuses[status] += 1
            if status >= 500 and status != 503:
                failures.append(f"h{n}: {status} {body[:120]!r} for {raw[:80]!r}")
            if status >= 400 and not _json_error(body):
                not_json.append(f"h{n} {status} {body[:60]!r}")
        if not finals:
            statuses["closed"] += 1
        request, said = raw[:100].decode("latin-1"), answer[:80].decode("latin-1")
        details.append({"n": n, "request": request, "hung": hung, "half_closed": shut,
                        "statuses": [s for s, _ in finals], "answer": said})  # fmt: skip

    def finish() -> Row:
        expected = {f"h{n}": 2 if case == PIPELINED else 1 for n, case in enumerate(cases)}
        # one end for the responses a case should get, none for fewer (a hang), two for more
        verdicts = {k: 1 if v == expected[k] else 0 if v < expected[k] else 2 for k, v in ends.items()}
        row = tally("http", list(expected), verdicts)
        row.failures += failures
        row.details = details
        row.figures = {"statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)},
                       "errors_not_json": not_json[:20]}  # fmt: skip
        return row

    return finish


def _json_error(body: bytes) -> bool:
    try:
        return bool(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return False


LEXICON_TEXTS = [
    lambda: "a" * 22 + "!", lambda: "a" * 40 + "!", lambda: "a" * 200 + "!", lambda: "a" * 1999 + "!",
    lambda: ("word " * 400)[:1999] + "!", lambda: "aa" * 999 + "!", lambda: " ".join(["a"] * 999) + "!",
    lambda: " ".join(f"The train to platform {n % 9 + 1} leaves now." for n in range(50))[:2000],
]  # fmt: skip
NORMAL = "The train to platform four leaves now."


def lexicon_texts(daemon, count: int):
    """Texts that make `(\\w+\\s?)+$` backtrack in Python's engine, over HTTP; each one's time is reported
    beside a normal request's, not judged (this machine's speed is no verdict)."""
    url = f"http://127.0.0.1:{daemon.http_port}{SPEECH}"

    def timed(text: str) -> tuple[int, float]:
        began = time.monotonic()
        response = httpx.post(url, json={"input": text, "response_format": "pcm"}, timeout=1800)
        return response.status_code, round(time.monotonic() - began, 2)

    normal = [timed(NORMAL)]
    texts = [LEXICON_TEXTS[n % len(LEXICON_TEXTS)]() for n in range(count)]
    results = [(len(text), *timed(text)) for text in texts]
    normal.append(timed(NORMAL))

    def finish() -> Row:
        ends = {f"t{n}": int(status in (200, 400)) for n, (_, status, _) in enumerate(results)}
        row = tally("lexicon", list(ends), ends)
        row.failures += [f"t{n}: {status}" for n, (_, status, _) in enumerate(results) if status >= 500]
        row.figures = {"normal_s": [s for _, s in normal],
                       "texts": [{"chars": c, "status": st, "s": s} for c, st, s in results]}  # fmt: skip
        return row

    return finish


def idle_sockets(daemon, count: int):
    """`count` idle Wyoming connections; a say meanwhile; both servers serve once they left."""
    listener, flood = daemon.listener, []
    refusals = ("connections from 127.0.0.1 are open", "file handles low")
    try:
        for _ in range(count):
            flood.append(socket.create_connection(("127.0.0.1", daemon.wyoming_port), timeout=HANG_S))
        refused = bool(_served(lambda: any(r in daemon.log() for r in refusals)))
        listener.say("idle-say", "Still here during the flood.")
        listener.wait(lambda: listener.ended(["idle-say"]), 600)
    finally:
        for sock in flood:
            sock.close()
    served = {"wyoming-after": _served(lambda: _described(daemon.wyoming_port)),
              "http-after": _served(lambda: _healthy(daemon.http_port))}  # fmt: skip

    def finish() -> Row:
        ends = {"idle-say": count_ends(listener.by_id().get("idle-say", [])), **served}
        row = tally("idle", list(ends), ends)
        if not listener.has("idle-say", "finished"):
            row.failures.append("the say during the flood did not finish")
        if "Too many open files" in daemon.log():
            row.failures.append("'Too many open files' in the log")
        row.figures = {"sockets": len(flood), "refusal_logged": refused}
        return row

    return finish


def _served(probe) -> int:
    """1 once `probe` succeeds, 0 if it never does within HANG_S (the daemon closes the flood's sockets)."""
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        try:
            if probe():
                return 1
        except (TimeoutError, OSError, httpx.HTTPError):
            pass
        time.sleep(0.5)
    return 0


def _healthy(port: int) -> bool:
    return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200


def _described(port: int) -> bool:
    async def ask() -> bool:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Describe().event())
            while (event := await client.read_event()) is not None:
                if event.type == "info":
                    return True
        return False

    return asyncio.run(asyncio.wait_for(ask(), 10))
