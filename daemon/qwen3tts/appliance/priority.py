"""The PA priority of an announcement: what a publisher names (`normal`, `priority`, `emergency`).

It is the appliance's notion, not the engine's: the engine orders requests by a plain number (`rank`)
and lets an `urgent` one displace others; `rank` and `urgent` below are how an announcement's level
reads to it. Network requests (HTTP, Wyoming) are no announcements and take a rank below every level
(synthesis.BACKGROUND_RANK).
"""

from __future__ import annotations

import enum


class Priority(enum.IntEnum):
    """Announcement levels as in PA paging, lowest first."""

    NORMAL = 0
    PRIORITY = 1
    EMERGENCY = 2

    @property
    def label(self) -> str:
        """The name a publisher writes and the spool stores."""
        return self.name.lower()

    @property
    def rank(self) -> int:
        """The engine's order: a higher rank is synthesised first."""
        return int(self)

    @property
    def urgent(self) -> bool:
        """An emergency may displace what the engine runs and is never held back when the chip is hot."""
        return self is Priority.EMERGENCY

    @classmethod
    def announcement_level(cls, label: str) -> Priority | None:
        """The level named `label`, None for any other name."""
        return cls.__members__.get(label.upper()) if label.isascii() else None


ANNOUNCEMENT_LEVELS = tuple(Priority)
"""The levels an announcement may have, lowest first (PA paging: normal, priority, emergency)."""
