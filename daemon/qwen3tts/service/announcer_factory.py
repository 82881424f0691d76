"""The announcement side of the daemon, built from the settings: the spooled queue, the speech defaults,
the phrase replay, the look-ahead over the engine, and the announcer that owns them (service.py calls it
once at start)."""

from __future__ import annotations

from collections.abc import Callable

from qwen3tts.appliance.announcements.announcer import Announcer
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.phrase_replay import PhraseReplay
from qwen3tts.appliance.announcements.piece_audio import PieceAudio
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.paths import runtime_dir
from qwen3tts.settings import Settings
from qwen3tts.steady_clock import STEADY
from qwen3tts.synthesis import SpeechDefaults, TextOptions
from qwen3tts.voices.catalog import VoiceCatalog


def make_announcer(settings: Settings, engine, speakers, chimes: ChimeSet, text: TextOptions,
                   catalog: VoiceCatalog, playbacks: dict[str, Playback], on_event, *,
                   heartbeat: Callable[[], None], on_change: Callable[[], None]) -> Announcer:  # fmt: skip
    """`speakers`: the bundle's own voices (the default voice falls back to its first)."""
    queue = AnnouncementQueue(
        settings.announcements.spool_dir,
        max_queue=settings.announcements.max_queue,
        max_attempts=settings.announcements.max_attempts,
        dedup_window=settings.announcements.dedup_window,
        ledger_dir=runtime_dir(),  # another filesystem than the spool's: what ended survives a restart
    )
    defaults = SpeechDefaults.from_settings(settings.voice, speakers)
    replay = PhraseReplay.from_settings(settings, engine, catalog)
    lookahead = LookAhead(engine, settings, defaults, text, catalog, replay, PieceAudio(chimes))
    return Announcer(settings, queue, lookahead, playbacks, on_event, clock=STEADY, heartbeat=heartbeat,
                     on_change=on_change)  # fmt: skip
