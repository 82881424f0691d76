"""Measure candidate HTTP stacks for the OpenAI-compatible server: import time and streaming latency.

Each stack serves one streaming endpoint (10 chunks of 80 ms of 16-bit 24 kHz audio, produced by a
thread the way the engine produces PCM) on loopback; a raw-socket client measures the time to the
first body byte and to the last, sequentially and with 4 concurrent clients. Installed size is measured
separately with `pip install --target DIR PKG && du -sk DIR` (see docs/servers.md).

    python scripts/compare_http_stacks.py aiohttp
    python scripts/compare_http_stacks.py starlette
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import subprocess
import sys
import threading
import time

CHUNK = b"\0" * 3840  # 80 ms of 16-bit mono 24 kHz
NUM_CHUNKS = 10
IMPORTS = {
    "aiohttp": "import aiohttp.web",
    "starlette": "import starlette.applications, starlette.responses, uvicorn",
}


def import_time(stack: str, runs: int = 7) -> float:
    """Median wall time of a fresh interpreter importing the stack, minus an empty interpreter."""

    def once(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - started

    base = statistics.median(once("pass") for _ in range(runs))
    return statistics.median(once(IMPORTS[stack]) for _ in range(runs)) - base


async def produce(queue: asyncio.Queue) -> None:
    """Chunks pushed from a worker thread, like PCM from the engine's step loop."""
    loop = asyncio.get_running_loop()

    def work() -> None:
        for _ in range(NUM_CHUNKS):
            loop.call_soon_threadsafe(queue.put_nowait, CHUNK)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=work, daemon=True).start()


async def serve_aiohttp(port: int) -> None:
    from aiohttp import web

    async def speech(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "audio/pcm"})
        await response.prepare(request)
        queue: asyncio.Queue = asyncio.Queue()
        await produce(queue)
        while (chunk := await queue.get()) is not None:
            await response.write(chunk)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/speech", speech)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    await asyncio.Event().wait()


async def serve_starlette(port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def speech(request):
        queue: asyncio.Queue = asyncio.Queue()
        await produce(queue)

        async def body():
            while (chunk := await queue.get()) is not None:
                yield chunk

        return StreamingResponse(body(), media_type="audio/pcm")

    app = Starlette(routes=[Route("/speech", speech, methods=["POST"])])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    await uvicorn.Server(config).serve()


def request_once(port: int) -> tuple[float, float]:
    """(seconds to the first body byte, seconds to the end) of one POST with a raw socket."""
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /speech HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        data, first = b"", None
        while chunk := sock.recv(65536):
            data += chunk
            if first is None and b"\r\n\r\n" in data and len(data) > data.index(b"\r\n\r\n") + 4:
                first = time.perf_counter() - started
        return first or 0.0, time.perf_counter() - started


def latency(port: int, concurrency: int, rounds: int = 100) -> tuple[float, float]:
    """Median (first byte, end) in ms over `rounds` requests, `concurrency` at a time."""
    results: list[tuple[float, float]] = []

    def client() -> None:
        for _ in range(rounds // concurrency):
            results.append(request_once(port))

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return (
        1000 * statistics.median(r[0] for r in results),
        1000 * statistics.median(r[1] for r in results),
    )


def main() -> None:
    stack = sys.argv[1]
    serve = {"aiohttp": serve_aiohttp, "starlette": serve_starlette}[stack]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    threading.Thread(target=lambda: asyncio.run(serve(port)), daemon=True).start()
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            break
        except OSError:
            time.sleep(0.05)
    latency(port, 1, rounds=20)  # warm-up
    print(f"{stack}: import {1000 * import_time(stack):.0f} ms")
    for concurrency in (1, 4):
        first, end = latency(port, concurrency)
        print(f"{stack}: {concurrency} client(s): first byte {first:.2f} ms, end {end:.2f} ms")


if __name__ == "__main__":
    main()
