"""What the announcer says: each step of an announcement as an event (logged, then `on_event`), and the
spool writes of its queue, whose failure is said once in the log instead of stopping the loop.

Used by the announcer and its collaborators (choosing.py, commands.py, endings.py), on its thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.play import Play

log = logging.getLogger(__name__)

OnEvent = Callable[..., None]
"""on_event(announcement, event, reason, warnings, play=, **zones): `queued`, `started`, ... `error`
(docs/mqtt.md); `play=` is the play the step is part of (its times, whether it came from the cache) or
None, `zones=` names the zones a step concerns, `zone=` the one zone whose output failed while the others
play."""


class Reporter:
    """Events and spool writes; `trouble` is why the last spool write failed (None once one succeeds)."""

    def __init__(
        self, on_event: OnEvent, *, zone_count: int = 1, on_change: Callable[[], None] = lambda: None
    ):
        self.on_event = on_event
        self.on_change = on_change
        """Called after every event: the status says what changed."""
        self.zone_count = zone_count
        """Zones of this box: with more than one, a log line names the zones of the step."""
        self.trouble: str | None = None
        self.on_ending: OnEvent = lambda *args, **kwargs: None
        """Called with a terminal event's arguments before the spool forgets its announcement (`end`):
        the service keeps what it will publish on disk, so a crash in between does not lose it."""

    def emit(
        self, ann: Announcement, event: str, reason: str = "", warnings: tuple[str, ...] = (),
        play: Play | None = None, **zones,
    ) -> None:  # fmt: skip
        """One event; `play` (the play it is part of), `zones=` (the zones it concerns) and `zone=` (the
        one that failed) go along."""
        size = f"{ann.media.seconds:.1f} s of media" if ann.media else f"{len(ann.text)} characters"
        detail = reason or (f"{ann.priority.label}, {size}" if event == "queued" else "")
        where = f" in {', '.join(zones['zones'])}" if zones.get("zones") and self.zone_count > 1 else ""
        log.info("%s: %s%s%s", ann.id, event, where, f" ({detail})" if detail else "")
        self.on_event(ann, event, reason, warnings, play=play, **zones)
        if ann.media is not None and ann.media.listener is not None and zones.get("zone") is None:
            ann.media.listener(event, reason)  # the requester's own account (a zone's error is not an end)
        self.on_change()

    def end(
        self, ann: Announcement, event: str, reason: str, spool: tuple, warnings: tuple[str, ...] = (),
        play: Play | None = None, **zones,
    ) -> tuple[bool, object]:  # fmt: skip
        """The last event of `ann`: `on_ending` first, then the spool change `spool` (what, change,
        *args, as `spool_write` takes them) that forgets it, then the event; the spool change's result."""
        if ann.spooled:
            self.on_ending(ann, event, reason, warnings, play=play, **zones)
        done = self.spool_write(*spool)
        self.emit(ann, event, reason, warnings, play, **zones)
        return done

    def spool_write(self, what: str, change: Callable, *args) -> tuple[bool, object]:
        """Apply a queue change that writes the spool: (True, its result); on OSError say so once and go
        on: (False, None)."""
        try:
            result = change(*args)
        except OSError as exc:
            trouble = exc.strerror or str(exc)
            if trouble != self.trouble:
                log.error(
                    "spool: cannot %s: %s (the daemon goes on; what ended is removed once the disk heals)",
                    what,
                    trouble,
                )
            self.trouble = trouble
            return False, None
        self.trouble = None
        return True, result
