"""Where the UPnP renderer's media goes (servers/renderer/outlet.py MediaOutlet): the one adapter
between the renderer and the announcement queue, and the only place that changes when the queue
takes audio.

Today the queue takes text only: an announcement is text (or SSML) that the look-ahead synthesises
piece by piece, and its spool record is that text. Media decoded by the renderer has no way in, so
every play is refused with the reason (a UPnP error for the controller, one log line here) and
nothing else of the box is touched. The renderer is complete on its side; what this adapter needs
from the queue's door to play media as an announcement, with the events an MQTT `say` gets:

- enqueue pre-rendered audio: float32 mono PCM at 24 kHz (up to `servers.renderer.max_media_s`), a
  title, a priority (an announcement level when the media comes from an announce source, else a
  normal, duckable stream that announcements interrupt and that resumes), all zones, a gain; the
  Play fills its track from the PCM instead of engine handles (no synthesis, no look-ahead);
- an id per accepted request and its lifecycle events (started, finished, cancelled, error) to a
  callback, which this adapter maps onto the renderer's `on_event`;
- stop by id (as MQTT `stop` with scope `id`), and a gain change for the one that plays;
- a decision on the spool: the PCM kept as a file beside the record (replayed after a crash) or
  media requests not spooled (lost with the process, as a controller expects of a renderer).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from qwen3tts.servers.renderer.outlet import Media, OutletRefused

log = logging.getLogger(__name__)

REASON = "the announcement queue does not take pre-rendered audio yet"


class QueueOutlet:
    """The renderer's MediaOutlet for the running box (see the module docstring for what it waits on)."""

    def __init__(self, announcer):
        self.announcer = announcer

    def play(self, media: Media, on_event: Callable[[str, str], None]) -> str:
        log.warning("renderer: %r (%.1f s) not played: %s", media.title, media.seconds, REASON)
        raise OutletRefused(REASON)

    def stop(self, play_id: str) -> None:
        """Nothing was taken, so nothing plays."""

    def set_gain(self, play_id: str, gain: float) -> None:
        """Nothing was taken, so nothing plays."""
