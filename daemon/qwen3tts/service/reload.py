"""SIGHUP: the configuration file read again and carried into the running daemon.

Volume, mute and the default voice's fields change only where the file changed them, so a volume or
voice set over MQTT survives a reload that did not touch it; the text options (normalisation, the site
lexicon) always follow the file; the queue is never touched. Changes for the announcer go through its
inbox like every other command. The service does the rest with what it owns: reconnecting MQTT when its
settings changed, the registered voices (voices.py).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from qwen3tts.errors import ConfigError
from qwen3tts.settings import Settings
from qwen3tts.synthesis import SpeechDefaults, TextOptions
from qwen3tts.text import reload_lexicon

log = logging.getLogger(__name__)

DEFAULT_FIELDS = ("voice", "language", "instruct")


def read_settings(config_path: Path | None, current: Settings) -> Settings | None:
    """The file's settings now (`current` when the daemon runs without a file); None when the file
    does not load, with the reason logged: a typo in the file must not take the running settings."""
    if config_path is None:
        return current
    from qwen3tts.settings_loader import load_settings

    try:
        return keep_start_only(current, load_settings(config_path))
    except (ConfigError, OSError) as exc:
        log.error("reload: keeping the old settings: %s", exc)
        return None


def keep_start_only(current: Settings, fresh: Settings) -> Settings:
    """`fresh`, but with the Hermes satellites as they run: each is a zone with its own sink and audio
    thread, made at start, so a change of them (logged) takes effect at the next start."""
    old, new = current.mqtt, fresh.mqtt
    if new.hermes_satellites == old.hermes_satellites:
        return fresh
    log.warning("reload: mqtt.hermes_satellites changed; that takes effect at the next start")
    kept = replace(new, hermes=old.hermes, hermes_site_id=old.hermes_site_id,
                   hermes_satellites=old.hermes_satellites)  # fmt: skip
    return replace(fresh, mqtt=kept)  # ConfigError when the kept satellites clash with the new zones


def carry_changes(old: Settings, fresh: Settings, announcer, text: TextOptions, speakers) -> None:
    """Post what the file changed from `old` to `fresh` to the announcer; update the text options.

    `speakers` are the bundle's, for the default voice's spelling.
    """
    if fresh.audio.volume != old.audio.volume:
        announcer.set_volume(fresh.audio.volume)
    if fresh.audio.muted != old.audio.muted:
        announcer.set_muted(fresh.audio.muted)
    was = SpeechDefaults.from_settings(old.voice, speakers)
    now = SpeechDefaults.from_settings(fresh.voice, speakers)
    changes = {
        name: getattr(now, name) for name in DEFAULT_FIELDS if getattr(now, name) != getattr(was, name)
    }
    if changes:
        announcer.set_defaults(changes)
    text.normalize = fresh.text.normalize
    text.lexicon = reload_lexicon(fresh.text.lexicon, text.lexicon)
