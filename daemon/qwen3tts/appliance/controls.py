"""The operator's controls over MQTT (`stop`, `volume/set`, `voice/set`) applied to the running parts.

The intake validated each message and passes it on as a command; this is the one place it takes
effect. A `voice/set` naming no known voice (voice_catalog.py) changes nothing and is logged.
"""

from __future__ import annotations

import logging

from qwen3tts.appliance.messages import SetVoice, SetVolume, Stop
from qwen3tts.appliance.voice_catalog import VoiceCatalog

log = logging.getLogger(__name__)


def apply_control(command, *, announcer, playback, catalog: VoiceCatalog) -> None:
    """Stop goes to the announcer; the volume to the playback; a known voice becomes the default."""
    if isinstance(command, Stop):
        announcer.command(command)
    elif isinstance(command, SetVolume):
        playback.volume = command.volume
        log.info("volume set to %.2f", command.volume)
    elif isinstance(command, SetVoice):
        voice = catalog.resolve(command.voice)
        if voice is None:
            log.warning("voice/set: unknown voice %r ignored", command.voice)
            return
        announcer.voice.voice = voice
        log.info("default voice set to %s", command.voice)
