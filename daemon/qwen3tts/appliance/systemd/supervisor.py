"""Supervised workers: nothing silences the appliance (docs/architecture.md, decision 14).

Each worker is a loop `run(stop)` on its own daemon thread. When it raises, the supervisor logs the
exception once with its traceback and the id of the item it was handling, lets the worker fail that
item (`on_failure`, e.g. an `error` event for the announcement), and starts the loop again after a
short backoff. A worker that fails `max_failures` times within `window_s` is beyond help: the
supervisor calls `on_fatal`, which ends the process non-zero so systemd restarts it.
Threads are daemons, so a wedged worker never keeps the process from exiting.

Inside a loop, `isolated(what, on_failure)` keeps one item's exception to that item: logged once with the
item's id and traceback, the item failed (an event), the loop goes on without a restart. These two are the
only places in the daemon that catch every exception.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class Worker:
    name: str
    run: Callable[[threading.Event], None]
    """The loop; returns when the event is set."""
    on_failure: Callable[[BaseException], str | None] = lambda exc: None
    """Fails the item the worker was handling; returns its id (for the log line) or None."""
    failures: deque[float] = field(default_factory=deque)
    thread: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    """Set to end this worker; `Supervisor.stop` sets every worker's (or the ones it is given)."""


class Supervisor:
    def __init__(
        self,
        on_fatal: Callable[[str], None],
        *,
        max_failures: int = 5,
        window_s: float = 60.0,
        backoff_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.on_fatal = on_fatal
        self.max_failures = max_failures
        self.window_s = window_s
        self.backoff_s = backoff_s
        self._clock = clock
        self.workers: list[Worker] = []
        self._closed = False  # stopped as a whole: a worker started now ends at once

    def start(self, name: str, run, on_failure=None) -> Worker:
        worker = Worker(name, run, on_failure or (lambda exc: None))
        if self._closed:
            worker.stop.set()
        worker.thread = threading.Thread(target=self._supervise, args=(worker,), name=name, daemon=True)
        self.workers.append(worker)
        worker.thread.start()
        return worker

    def stop(self, timeout: float = 5.0, *, keep: tuple[str, ...] = ()) -> list[str]:
        """Ask every worker but those named in `keep` to end (a composition root stops some parts in
        an order: the engine after the servers that wait on it); returns the names of those still
        running after `timeout`."""
        self._closed = self._closed or not keep
        stopping = [w for w in self.workers if w.name not in keep]
        for worker in stopping:
            worker.stop.set()
        deadline = time.monotonic() + timeout
        for worker in stopping:
            if worker.thread is not None:
                worker.thread.join(max(0.0, deadline - time.monotonic()))
        wedged = [w.name for w in stopping if w.thread is not None and w.thread.is_alive()]
        for name in wedged:
            log.error("worker %s did not stop within %.0f s; leaving it behind", name, timeout)
        return wedged

    def _supervise(self, worker: Worker) -> None:
        while not worker.stop.is_set():
            try:
                worker.run(worker.stop)
                return
            except Exception as exc:  # the supervisor boundary: fail the item, restart the loop
                if not self._recover(worker, exc):
                    return
            worker.stop.wait(self.backoff_s)

    def _recover(self, worker: Worker, exc: Exception) -> bool:
        try:
            item = worker.on_failure(exc)
        except Exception:  # failing the item failed too; the restart still happens
            log.exception("worker %s could not fail the item it was handling", worker.name)
            item = None
        log.error("worker %s failed%s; restarting it", worker.name, f" on {item}" if item else "",
                  exc_info=exc)  # fmt: skip
        now = self._clock()
        worker.failures.append(now)
        while worker.failures and worker.failures[0] < now - self.window_s:
            worker.failures.popleft()
        if len(worker.failures) >= self.max_failures:
            log.critical("worker %s failed %d times within %.0f s; exiting for a restart",
                         worker.name, len(worker.failures), self.window_s)  # fmt: skip
            self.on_fatal(worker.name)
            return False
        return True


@contextmanager
def isolated(what: str, on_failure: Callable[[BaseException], object]) -> Iterator[None]:
    """Run one item's work; an exception fails that item only (`on_failure`) and is not raised further.

    `what` names the item for the log line (e.g. "announcement a1: playback progress"). Should failing
    the item raise too (a report that cannot be written), that is logged and swallowed as well: the
    worker must go on with its other items.
    """
    try:
        yield
    except Exception as exc:  # the item boundary: this item fails, its worker goes on
        log.error("%s failed: %s: %s", what, type(exc).__name__, exc, exc_info=exc)
        try:
            on_failure(exc)
        except Exception:  # failing the item failed too (e.g. a read-only state directory)
            log.exception("%s: the failure could not be reported", what)
