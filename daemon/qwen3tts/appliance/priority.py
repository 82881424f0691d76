"""The PA priority of an announcement: what a publisher names (`normal`, `priority`, `emergency`).

It is the appliance's notion, not the engine's: the engine orders requests by a plain number (`rank`)
and lets an `urgent` one displace others; `rank` and `urgent` below are how an announcement's level
reads to it. Network requests (HTTP, Wyoming) are no announcements and take a rank below every level
(synthesis.BACKGROUND_RANK). BACKGROUND is no announcement level either: it is the level of a media stream
(the UPnP renderer's media that is not from an announce source), which every announcement interrupts.
"""

from __future__ import annotations

import enum


class Priority(enum.IntEnum):
    """Announcement levels as in PA paging, lowest first, below them BACKGROUND for media streams."""

    BACKGROUND = -1
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
        """The announcement level named `label`, None for any other name (BACKGROUND is not one)."""
        level = cls.__members__.get(label.upper()) if label.isascii() else None
        return level if level is not None and level is not cls.BACKGROUND else None


ANNOUNCEMENT_LEVELS = (Priority.NORMAL, Priority.PRIORITY, Priority.EMERGENCY)
"""The levels an announcement may have, lowest first (PA paging: normal, priority, emergency)."""
