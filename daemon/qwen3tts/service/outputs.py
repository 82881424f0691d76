"""The state of each zone's audio output, as the service reports it (status, /metrics, the log)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)


class OutputStates:
    """Which zones' outputs are not ok (`lost`, ...); `changed()` is each sink's state callback."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.states: dict[str, str] = {}  # zone -> its output's state, when not ok
        self._on_change = on_change

    def changed(self, zone: str, state: str, detail: str) -> None:
        if state == "ok":
            self.states.pop(zone, None)
        else:
            self.states[zone] = state
        log.log(
            logging.INFO if state == "ok" else logging.WARNING, "zone %s output %s: %s", zone, state, detail
        )
        self._on_change()

    def first_problem(self) -> str:
        """`ok`, or the state of the first zone whose output is not ok."""
        return next(iter(self.states.values()), "ok")

    def summary(self, sinks: Mapping) -> str:
        """`<sink>:<state>` on a box with one zone; `<zone>=<sink>:<state>, ...` with several."""
        parts = {zone: f"{sink.name}:{self.states.get(zone, 'ok')}" for zone, sink in sinks.items()}
        if list(parts) == ["default"]:
            return parts["default"]
        return ", ".join(f"{zone}={part}" for zone, part in parts.items())


def audio_worker(zone: str) -> str:
    """The supervised worker (and heartbeat) name of a zone's audio thread: `audio` for the one default."""
    return "audio" if zone == "default" else f"audio:{zone}"
