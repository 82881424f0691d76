"""Where the UPnP renderer's media goes (servers/renderer/outlet.py MediaOutlet): the one adapter
between the renderer and the announcement queue.

A play becomes an announcement with pre-rendered audio (appliance/announcements/media.py): its
title as text, its samples, all zones, no chime, the renderer's gain as its own volume (the master
volume and mute still apply; the renderer never changes them). Media from `announce_sources` is a
`normal` announcement; any other is a stream at BACKGROUND that every announcement interrupts and that
resumes from the segment it was in. It gets the events an MQTT `say` gets, on the MQTT event topic with
its id, and the same events reach the renderer through the announcement's listener, mapped onto the
outlet's four. Stop and gain go to the announcer's inbox by id, as MQTT `stop` does. Media is never
spooled: a restart loses it, as a controller expects of a renderer.
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections.abc import Callable

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.media_audio import MediaAudio, media_pcm
from qwen3tts.appliance.priority import Priority
from qwen3tts.servers.renderer.outlet import Media, OutletRefused
from qwen3tts.steady_clock import STEADY

log = logging.getLogger(__name__)

OUTLET_EVENT = {
    "started": "started",
    "finished": "finished",
    "cancelled": "cancelled",
    "expired": "cancelled",
    "error": "error",
    "rejected": "error",
}
"""The announcement's events the renderer hears of, as the outlet's (`queued` and `first_audio` are
steps on the way; a `queued` after an interruption means it resumes later)."""


class QueueOutlet:
    """The renderer's MediaOutlet for the running box: media into the announcer's queue."""

    def __init__(self, announcer):
        self.announcer = announcer
        self._prefix = f"upnp-{secrets.token_hex(3)}"  # ids unique across restarts (the duplicate memory)
        self._numbers = itertools.count(1)

    def play(self, media: Media, on_event: Callable[[str, str], None]) -> str:
        """Queue the media as an announcement; its id. OutletRefused when the queue is full now."""
        queue = self.announcer.queue
        if len(queue) >= queue.max_queue:
            raise OutletRefused(f"queue full ({queue.max_queue} announcements waiting)")
        ann_id = f"{self._prefix}-{next(self._numbers)}"
        priority = Priority.NORMAL if media.announce else Priority.BACKGROUND
        ann = Announcement(
            id=ann_id,
            text=media.title,
            priority=priority,
            volume=media.gain,
            chime="none",
            t_queued=STEADY(),
            media=MediaAudio(media_pcm(media.pcm), _listener(ann_id, on_event)),
        )
        kind = "announcement" if media.announce else "stream"
        log.info("%s: renderer media %r, %.1f s, as %s", ann_id, media.title, media.seconds, kind)
        self.announcer.enqueue(ann)
        return ann_id

    def stop(self, play_id: str) -> None:
        self.announcer.stop("id", play_id, _no_answer)

    def set_gain(self, play_id: str, gain: float) -> None:
        self.announcer.set_gain(play_id, gain)


def _listener(ann_id: str, on_event: Callable[[str, str], None]) -> Callable[[str, str], None]:
    def hear(event: str, reason: str) -> None:  # the announcer's thread
        outlet_event = OUTLET_EVENT.get(event)
        if outlet_event is None:
            return
        try:
            on_event(outlet_event, reason)
        except RuntimeError as exc:  # the servers' loop is closed (they stopped first): nobody listens
            log.info("%s: the renderer no longer listens (%s)", ann_id, exc)

    return hear


def _no_answer(event: str, **fields) -> None:
    """The renderer's Stop needs no answer: the play's own `cancelled` event follows."""
