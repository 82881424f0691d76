"""The renderer's state machine: one URI, one play at a time, on the servers' event loop.

    NO_MEDIA_PRESENT --SetAVTransportURI--> STOPPED --Play--> TRANSITIONING (fetch, decode, hand-off)
        --outlet "started"--> PLAYING --outlet "finished"/"cancelled", Stop--> STOPPED

A Play answers once the media is fetched, decoded and taken by the outlet, so a URL that cannot be
played is the controller's UPnP error (and one log line), never a silent STOPPED. A new URI or a Stop
cancels a fetch under way and cuts what plays. Outlet events arrive from any thread and are moved onto
the loop; an event for a play that is no longer current is ignored. Volume and mute are the renderer's
own: its gain, (volume/100)² (about equal loudness steps) or 0 when muted, goes with each play and
follows changes while it sounds.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import aiohttp

from qwen3tts.servers.renderer.decode import decode_media
from qwen3tts.servers.renderer.fetch import CONTENT_BUSY, FetchLimits, MediaError, check_url, fetch_media
from qwen3tts.servers.renderer.metadata import media_title
from qwen3tts.servers.renderer.outlet import Media, MediaOutlet, OutletRefused

log = logging.getLogger(__name__)

TRANSITION_NOT_AVAILABLE = 701


@dataclass(frozen=True)
class PlayerLimits:
    fetch: FetchLimits
    max_seconds: float
    announce_sources: tuple[str, ...] = ()


class Player:
    """What the AVTransport and RenderingControl services read and change (loop thread only)."""

    def __init__(self, outlet: MediaOutlet, limits: PlayerLimits, session: aiohttp.ClientSession,
                 decoder: Executor):  # fmt: skip
        self.outlet = outlet
        self.limits = limits
        self.session = session
        self.state = "NO_MEDIA_PRESENT"
        self.status = "OK"
        self.uri = ""
        self.metadata = ""
        self.title = ""
        self.volume = 50
        self.muted = False
        self.duration = 0.0
        self._play_id: str | None = None  # the outlet's id of what plays
        self._local_id: str | None = None  # ours, carried by the outlet's events
        self._started_at: float | None = None
        self._loading: asyncio.Task | None = None
        self._decoder = decoder  # one thread: decodes never pile up, whatever a controller sends
        self._numbers = itertools.count(1)
        self._listeners: list[Callable[[], None]] = []
        self._loop = asyncio.get_running_loop()

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    @property
    def actions(self) -> str:
        """CurrentTransportActions: what may be asked now."""
        return {"NO_MEDIA_PRESENT": "", "STOPPED": "Play", "TRANSITIONING": "Stop"}.get(self.state, "Stop")

    @property
    def gain(self) -> float:
        return 0.0 if self.muted else (self.volume / 100.0) ** 2

    def position(self) -> float:
        if self.state != "PLAYING" or self._started_at is None:
            return 0.0
        return min(time.monotonic() - self._started_at, self.duration)

    # ---- transport ----

    def set_uri(self, uri: str, metadata: str) -> None:
        check_url(uri)
        self._cut("a new URI")
        self.uri, self.metadata, self.title = uri, metadata, media_title(metadata, uri)
        self.duration, self.status = 0.0, "OK"
        log.info("renderer: media set: %r (%s)", self.title, uri[:200])
        self._set_state("STOPPED")

    async def play(self, controller: str | None) -> None:
        """Fetch, decode and hand on the current URI; MediaError (with its UPnP code) when that fails."""
        if self.state in ("PLAYING", "TRANSITIONING"):
            return  # already under way: Play is idempotent
        if not self.uri:
            raise MediaError("no media set (SetAVTransportURI first)", TRANSITION_NOT_AVAILABLE)
        number = next(self._numbers)
        self._set_state("TRANSITIONING")
        task = self._loop.create_task(self._load(number, controller))
        self._loading = task
        await asyncio.wait({task})
        if task.cancelled():
            raise MediaError("stopped before it played", CONTENT_BUSY)
        task.result()  # raises what the load raised

    async def _load(self, number: int, controller: str | None) -> None:
        try:
            data = await fetch_media(self.session, self.uri, self.limits.fetch)
            decoding = self._loop.run_in_executor(self._decoder, decode_media, data, self.limits.max_seconds)
            pcm = await decoding
            announce = controller is not None and controller in self.limits.announce_sources
            media = Media(pcm=pcm, title=self.title, url=self.uri, announce=announce, gain=self.gain)
            self._play_id = self.outlet.play(media, self._event_callback(f"r{number}"))
            self._local_id, self.duration = f"r{number}", media.seconds
        except (MediaError, OutletRefused) as exc:
            code = exc.code if isinstance(exc, MediaError) else CONTENT_BUSY
            log.warning("renderer: play %d of %s refused: %s", number, self.uri[:200], exc)
            self.status = "ERROR_OCCURRED"
            raise MediaError(str(exc), code) from None
        finally:
            if self._loading is asyncio.current_task():  # else a cut already moved on to what follows
                self._loading = None
                if self._play_id is None:  # nothing handed on, whatever went wrong: not stuck in between
                    self._set_state("STOPPED")
        kind = "announcement" if announce else "stream"
        log.info("renderer: play %d handed on as %s: %r, %.1f s, %s, from %s", number, self._play_id,
                 self.title, media.seconds, kind, controller)  # fmt: skip

    def stop(self) -> None:
        self._cut("Stop")
        if self.uri:
            self._set_state("STOPPED")

    def close(self) -> None:
        """The servers stop: a fetch under way is dropped; a play already handed on stays the outlet's."""
        if self._loading is not None:
            self._loading.cancel()
            self._loading = None

    def _cut(self, why: str) -> None:
        if self._loading is not None:
            self._loading.cancel()
            self._loading = None
        if self._play_id is not None:
            play_id, self._play_id = self._play_id, None
            log.info("renderer: %s cuts %s", why, play_id)
            self.outlet.stop(play_id)
        self._started_at = None

    # ---- rendering ----

    def set_volume(self, volume: int) -> None:
        self.volume = volume
        self._gain_changed()

    def set_muted(self, muted: bool) -> None:
        self.muted = muted
        self._gain_changed()

    def _gain_changed(self) -> None:
        if self._play_id is not None:
            self.outlet.set_gain(self._play_id, self.gain)
        self._changed()

    # ---- outlet events ----

    def _event_callback(self, local_id: str) -> Callable[[str, str], None]:
        def on_event(event: str, reason: str = "") -> None:  # any thread
            self._loop.call_soon_threadsafe(self._outlet_event, local_id, event, reason)

        return on_event

    def _outlet_event(self, local_id: str, event: str, reason: str) -> None:
        if self._play_id is None or self._local_id != local_id:
            return  # a play that was cut or replaced
        if event == "started":
            self._started_at = time.monotonic()
            self._set_state("PLAYING")
            return
        log.info("renderer: %s %s%s", self._play_id, event, f": {reason}" if reason else "")
        self._play_id, self._started_at = None, None
        if event == "error":
            self.status = "ERROR_OCCURRED"
        self._set_state("STOPPED")

    def _set_state(self, state: str) -> None:
        self.state = state
        self._changed()

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()
