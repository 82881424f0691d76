"""The thread that makes one output stream's blocking calls, so the audio thread can give up on a stuck one.

A sound device can stop taking samples without failing: a USB speaker half unplugged, a driver that no
longer advances its pointer, a `file` PCM whose reader stopped reading. PortAudio's blocking write then
never returns (its ALSA host API treats a silent device as an underrun and waits again), and a call that
never returns cannot be interrupted from Python. So every call into one stream (open, start, write, stop,
close) runs on that stream's own DeviceThread, and the caller waits at most a deadline for it. A call
that misses it marks the thread `stuck` (DeviceStalled is raised to the caller, which fails the play and
opens a new stream on a new DeviceThread): the audio thread, and with it the watchdog's heartbeat,
never blocks in the driver. The stuck thread is retired: once its call returns, if ever, it runs the
cleanup it was given (closing its stream) and ends. It is a daemon thread, so it never holds up exit.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from qwen3tts.errors import AudioError

log = logging.getLogger(__name__)


class DeviceStalled(AudioError):
    """A call into the sound device did not return within its deadline: the device takes no samples."""


class _Call:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: Any = None
        self.error: Exception | None = None


class DeviceThread:
    """Runs callables one at a time on a dedicated daemon thread; `call()` waits for each with a deadline."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stuck = False
        """A call missed its deadline; no further call is accepted."""
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"audio-device {name}", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        """The thread still runs: after `retire()`, a call of it is still inside the driver."""
        return self._thread.is_alive()

    def call(self, fn: Callable[[], Any], *, timeout: float, what: str) -> Any:
        """`fn()` on the device thread; its result or its exception. DeviceStalled after `timeout` seconds
        (the thread is then `stuck`, and `fn` may still return later: whatever it returns is dropped)."""
        if self.stuck:
            raise DeviceStalled(f"{what}: an earlier call into {self.name} never returned")
        call = _Call(fn)
        self._calls.put(call)
        if not call.done.wait(timeout):
            self.stuck = True
            raise DeviceStalled(f"{what} did not return within {timeout:g} s: the device takes no samples")
        if call.error is not None:
            raise call.error
        return call.result

    def retire(self, cleanup: Callable[[], None]) -> None:
        """Accept no more calls: run `cleanup` after the call in progress (if any) returns, then end."""
        self.stuck = True
        self._calls.put(_Call(cleanup))
        self._calls.put(None)

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            try:
                call.result = call.fn()
            except Exception as exc:  # handed to the caller, who decides; the thread goes on
                call.error = exc
            call.done.set()
        log.debug("%s: device thread ended", self.name)
