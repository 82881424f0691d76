"""The renderer's one hand-off: decoded media given to whatever plays it (the service wires it).

The servers never import the appliance, so the renderer knows only this protocol. The service passes
an object that has it (service/renderer_outlet.py); tests pass a fake. Everything here is called on the
servers' event-loop thread; `on_event` may be called back from any thread (the renderer moves it onto
its loop).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

MEDIA_RATE = 24_000
"""Hz of the PCM handed on: the engine's rate, so the audio path needs no second resampler."""

OUTLET_EVENTS = ("started", "finished", "cancelled", "error")
"""What an outlet reports of a play it took: it began to sound, it ended, it was cut, it failed."""


@dataclass(frozen=True)
class Media:
    """One decoded piece of media, ready to be played as an announcement."""

    pcm: np.ndarray
    """float32 mono in [-1, 1] at MEDIA_RATE."""
    title: str
    """From the controller's metadata (dc:title), else the URL's last path part; for logs and events."""
    url: str
    announce: bool
    """The controller is one of `servers.renderer.announce_sources`: play at announcement priority,
    else as a normal, duckable stream."""
    gain: float
    """The renderer's volume and mute as a linear factor (0 when muted) at the time it was handed on."""

    @property
    def seconds(self) -> float:
        return len(self.pcm) / MEDIA_RATE


class OutletRefused(Exception):
    """The outlet cannot take the media (the queue is full); the reason is shown."""


class MediaOutlet(Protocol):
    """What the renderer needs from the box: play one piece, stop it, follow the volume."""

    def play(self, media: Media, on_event: Callable[[str, str], None]) -> str:
        """Take `media`; return its id. `on_event(event, reason)` reports OUTLET_EVENTS later.
        Raises OutletRefused with the reason when it cannot."""
        ...

    def stop(self, play_id: str) -> None:
        """Cut the play of that id (nothing if it already ended)."""
        ...

    def set_gain(self, play_id: str, gain: float) -> None:
        """The volume or mute changed while that play sounds: its gain from now on."""
        ...
