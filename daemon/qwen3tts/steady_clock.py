"""The announcements' time line: Unix time that a step of the wall clock does not move.

A box without a real-time clock boots with the wrong time and NTP steps it, often by hours; an operator
may set it by hand. A deadline kept in wall time would then expire at once (a step forwards) or wait
hours too long (a step backwards). So the deadlines of an accepted announcement, `ttl`, the MQTT 5 Message
Expiry, `announcements.default_ttl`, the pause between repeats, and `expires_at` once it has been read,
are kept on this time line: the wall clock as it was when the process started, advanced by the monotonic
clock since. It reads like Unix time and is spooled as such; event timestamps stay on the real wall
clock. The rule for operators is in docs/mqtt.md ("Time and clocks").
"""

from __future__ import annotations

import time
from collections.abc import Callable


class SteadyClock:
    """Unix time that follows the monotonic clock from the moment it was made."""

    def __init__(
        self, wall: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic
    ):
        self._wall, self._monotonic = wall, monotonic
        self._offset = wall() - monotonic()

    def __call__(self) -> float:
        return self._monotonic() + self._offset

    def from_wall(self, t: float) -> float:
        """Wall-clock time `t` (a publisher's `expires_at`) on this time line, judged by the wall clock now:
        what is left until `t` now is what is left on the time line."""
        return t + (self() - self._wall())


STEADY = SteadyClock()
"""The process's one time line: what the intake sets and what the announcer checks must be on the same one."""
