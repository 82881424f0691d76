"""The text front end where a stalled match can be abandoned: `prepare` in worker processes, with a deadline.

Lexicon patterns are matched by RE2 (linear time) and every regex of the front end is audited and
fuzzed for time per character, but one missed case, in-process, holds the interpreter lock: MQTT, the
servers and the watchdog would stop with it. So the daemon runs `prepare` in a few small processes
forked from a forkserver that has the front end imported (guard_worker.py), started and warmed at
daemon start. A call that has no answer by its deadline is abandoned: that worker is killed by pid
and replaced, and the call raises FrontEndTimeout (a RequestError, so the announcement ends with an
`error`, HTTP answers 400 and Wyoming an `error` event). A worker that died otherwise (killed from
outside, out of memory) is replaced and the call tried once on a fresh one.

The lexicon travels with a call only when it is not the one that worker last got (it is replaced on
SIGHUP, so nearly every call sends a one-word marker instead: docs/benchmarks.md has both costs).

Why not concurrent.futures.ProcessPoolExecutor: it cannot abandon one running call, and killing one of
its workers breaks the whole pool (every other caller's call fails with BrokenProcessPool).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable

from qwen3tts.errors import RequestError
from qwen3tts.text.guard_worker import SAME_LEXICON, serve
from qwen3tts.text.languages import MODEL_LANGUAGES
from qwen3tts.text.lexicon import Lexicon
from qwen3tts.text.prepare import Prepared, prepare

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 60.0  # a new worker warms the language detector (about 2 s) before its first call
PRELOAD = ["qwen3tts.text.guard_preload"]  # what the forkserver imports (and warms) once for every worker


class FrontEndTimeout(RequestError):
    """A text took longer than the deadline in the text front end; its worker was killed."""


class _Worker:
    """One worker process and the daemon's end of its pipe; used by one caller at a time."""

    def __init__(self, process, conn):
        self.process = process
        self.conn = conn
        self.ready = False
        self.lexicon: Lexicon | None = None
        """The lexicon this worker holds (the object last sent; kept so `is` cannot see a reused id)."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_ready(self, timeout: float) -> None:
        """Block until the worker said it is warm; OSError/EOFError if it died, TimeoutError if slow."""
        if self.ready:
            return
        if not self.conn.poll(timeout):
            raise TimeoutError(f"text front end worker {self.pid} not ready within {timeout:.0f} s")
        self.conn.recv()
        self.ready = True

    def kill(self) -> None:
        """SIGKILL by pid (a stalled match ignores anything gentler), reap it, close the pipe."""
        if self.process.is_alive():
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                os.kill(self.pid, signal.SIGKILL)
        self.process.join(5)
        self.conn.close()


class GuardedFrontEnd:
    """`prepare` with the same arguments, run in `workers` processes, each call within `deadline_s`."""

    def __init__(
        self,
        deadline_s: float,
        languages: Iterable[str] = MODEL_LANGUAGES,
        workers: int = 2,
        target: Callable[..., Prepared] = prepare,
    ):
        """`target` is what the workers run (a module-level function; tests give one that stalls)."""
        self.deadline_s = deadline_s
        self.languages = tuple(languages)
        self._target = target
        self._size = workers
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(PRELOAD)
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []  # every live worker, for pids() and close()
        self.replaced = 0
        """Workers killed or found dead and replaced, since start."""
        self._stopped = False

    def start(self) -> GuardedFrontEnd:
        """Start every worker and wait until each is warm (at daemon start, so no request waits for it)."""
        started = [self._spawn() for _ in range(self._size)]
        for worker in started:
            worker.wait_ready(READY_TIMEOUT_S)
            self._idle.put(worker)
        log.info("text front end: %d worker processes (pids %s), %.1f s per text",
                 len(started), ", ".join(str(w.pid) for w in started), self.deadline_s)  # fmt: skip
        return self

    def pids(self) -> list[int]:
        with self._lock:
            return [worker.pid for worker in self._workers]

    def stop(self) -> None:
        """Stop every worker (the daemon is stopping); a call still running fails, none is replaced."""
        with self._lock:
            self._stopped = True
            workers, self._workers = self._workers, []
        for worker in workers:
            worker.kill()

    def __call__(
        self,
        text: str,
        language: str | None = None,
        normalize: bool = True,
        lexicon: Lexicon | None = None,
        supported: Iterable[str] = MODEL_LANGUAGES,
        *,
        ssml: bool | None = None,
        chimes: Iterable[str] | None = None,
    ) -> Prepared:
        """`prepare(text, language, normalize, lexicon, supported, ssml=, chimes=)` in a worker;
        FrontEndTimeout past the deadline, RequestError for what `prepare` refuses."""
        marks = {"ssml": ssml, "chimes": None if chimes is None else tuple(chimes)}
        call = (text, language, normalize, lexicon, tuple(supported), marks)
        for attempt in range(2):
            worker = self._take()
            try:
                kind, value = self._ask(worker, call)
            except (EOFError, OSError) as exc:  # died before or while answering: not this text's doing
                self._replace(worker, f"found dead ({type(exc).__name__})")
                if attempt:
                    raise RequestError("the text front end's worker died while reading this text") from None
                continue
            self._idle.put(worker)
            if kind == "ok":
                return value
            raise value
        raise AssertionError("unreachable")

    # ---- one call ----

    def _take(self) -> _Worker:
        """An idle worker, alive and warm; waits while every worker is busy (each busy call ends by its
        deadline). A worker found dead while idle (killed from outside) is replaced on the way."""
        for _ in range(self._size + 1):
            try:
                worker = self._idle.get(timeout=self.deadline_s + READY_TIMEOUT_S)
            except queue.Empty:
                raise RequestError("the text front end is busy") from None
            if not worker.process.is_alive():
                self._replace(worker, f"found dead (exit code {worker.process.exitcode})")
                continue
            try:
                worker.wait_ready(READY_TIMEOUT_S)
            except (EOFError, OSError, TimeoutError) as exc:
                self._replace(worker, f"did not start ({exc})")
                continue
            return worker
        raise RequestError("the text front end's workers do not start")

    def _ask(self, worker: _Worker, call: tuple) -> tuple[str, object]:
        text, language, normalize, lexicon, supported, marks = call
        sent = SAME_LEXICON if worker.lexicon is lexicon else lexicon
        started = time.monotonic()
        worker.conn.send((text, language, normalize, sent, supported, marks))
        worker.lexicon = lexicon
        if not worker.conn.poll(self.deadline_s):
            waited = time.monotonic() - started
            self._replace(worker, f"abandoned after {waited:.1f} s on a text of {len(text)} characters")
            raise FrontEndTimeout(f"the text front end took longer than {self.deadline_s:g} s")
        return worker.conn.recv()

    def _spawn(self) -> _Worker:
        parent_end, child_end = self._context.Pipe()
        process = self._context.Process(
            target=serve, args=(child_end, self.languages, self._target), name="qwen3tts-text", daemon=True
        )
        process.start()
        child_end.close()  # only the child holds its end: its death is EOF here
        worker = _Worker(process, parent_end)
        with self._lock:
            self._workers.append(worker)
        return worker

    def _replace(self, worker: _Worker, why: str) -> None:
        """Kill `worker` by pid and put a fresh one (warming up) in its place."""
        log.error("text front end worker %d %s: killed and replaced", worker.pid, why)
        with self._lock:
            if worker in self._workers:
                self._workers.remove(worker)
        worker.kill()
        if self._stopped:
            return
        self.replaced += 1
        self._idle.put(self._spawn())
