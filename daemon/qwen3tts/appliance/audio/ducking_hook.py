"""What a zone's playback calls around each track to lower the zone's other audio (zones/ducking/)."""

from __future__ import annotations

from typing import Protocol


class Ducking(Protocol):
    """Lowers a zone's other audio while a track plays; never raises (a failing backend logs itself)."""

    def duck(self, announcement: str) -> None:
        """Lower, and return once the ramp in is over (the chime starts after it)."""

    def unduck(self, announcement: str, hold: bool = False) -> None:
        """Raise back after the last sample, a cut or a failure; `hold`: the next track is already
        waiting (a barge-in), stay lowered for it and let its `duck` take over without ramps."""

    def recover(self) -> None:
        """While idle: raise what a crash of ours left lowered, or a held duck no track took over."""
