"""SIGHUP: the configuration file read again and carried into the running daemon.

Volume, mute and the default voice's fields change only where the file changed them, so a volume or
voice set over MQTT survives a reload that did not touch it; the text options (normalisation, the
site lexicon) always follow the file; the queue is never touched. The service does the rest with
what it owns: reconnecting MQTT when its settings changed, the registered voices (voice_catalog.py).
"""

from __future__ import annotations

import logging
from pathlib import Path

from qwen3tts.appliance.lookahead import Voice
from qwen3tts.appliance.synthesis import TextOptions
from qwen3tts.settings import Settings
from qwen3tts.text import reload_lexicon

log = logging.getLogger(__name__)

VOICE_FIELDS = ("voice", "language", "instruct")


def read_settings(config_path: Path | None, current: Settings) -> Settings | None:
    """The file's settings now (`current` when the daemon runs without a file); None when the file
    does not load, with the reason logged: a typo in the file must not take the running settings."""
    if config_path is None:
        return current
    from qwen3tts.settings_loader import load_settings

    try:
        return load_settings(config_path)
    except Exception:
        log.exception("reload: keeping the old settings")
        return None


def carry_changes(
    old: Settings, fresh: Settings, playback, voice: Voice, text: TextOptions, speakers
) -> None:
    """Apply what the file changed from `old` to `fresh` to the live playback, default voice and text
    options; `speakers` are the bundle's, for the voice's spelling."""
    if fresh.audio.volume != old.audio.volume:
        playback.volume = fresh.audio.volume
    if fresh.audio.muted != old.audio.muted:
        playback.muted = fresh.audio.muted
    was, now = Voice.from_settings(old.voice, speakers), Voice.from_settings(fresh.voice, speakers)
    for name in VOICE_FIELDS:
        if getattr(now, name) != getattr(was, name):
            setattr(voice, name, getattr(now, name))
    text.normalize = fresh.text.normalize
    text.lexicon = reload_lexicon(fresh.text.lexicon, text.lexicon)
