"""The Hermes sites this box answers for: its own siteId and the satellites it speaks for
(`mqtt.hermes_satellites`, zones/hermes_satellite.py).

A Hermes say for one of them becomes a say's fields with that site's zones, admitted like any other
(validate.py, say_reader.py `admit`); a satellite's playFinished ends the play waiting for it; getVoices
is answered for our sites only. What names any other site is another box's: the intake drops it
(logged), never answers it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from qwen3tts.appliance.mqtt.hermes import HermesGetVoices, HermesPlayFinished, HermesSay, HermesVoices
from qwen3tts.appliance.mqtt.messages import Inbound, Message
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.voices.catalog import VoiceCatalog

log = logging.getLogger(__name__)


class HermesSites:
    """Our siteId and our satellites': whose Hermes requests the intake takes, and in which zones."""

    def __init__(
        self,
        site_id: str,
        topics: Topics,
        publish: Callable[[Message], object],
        *,
        chime: bool = False,
        play_finished: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.site_id = site_id
        self.topics = topics
        self.publish = publish
        self.chime = chime
        """Play the announcement chime before Hermes dialogue replies (default off)."""
        self.play_finished = play_finished
        """A satellite's playFinished(siteId, id) for the satellite zones (zones/hermes_satellite.py)."""

    def speaks_for(self, site_id: str) -> bool:
        return site_id == self.site_id or site_id in self.topics.hermes_satellites

    def zones(self, site_id: str, box_zones: tuple[str, ...]) -> tuple[str, ...]:
        """A satellite's say plays in its zone only; our own siteId's in every zone but the satellites."""
        satellites = self.topics.hermes_satellites
        if site_id in satellites:
            return (site_id,)
        return tuple(zone for zone in box_zones if zone not in satellites) if satellites else ()

    def say_fields(self, message: HermesSay, inbound: Inbound, box_zones: tuple[str, ...]) -> dict[str, Any]:
        """The Hermes say as a say's fields (say_reader.py `admit`'s keywords), admitted like any other."""
        return {
            "text": message.text,
            "id": message.id,
            "lang": message.lang,
            "volume": message.volume,
            "chime": None if self.chime else "none",
            "message_expiry": inbound.message_expiry,  # MQTT 5 expiry bounds a Hermes say like any other
            "zones": self.zones(message.site_id, box_zones),
        }

    def satellite_played(self, done: HermesPlayFinished) -> None:
        """A satellite's playFinished (validated: validate.py): the end of the play waiting for it."""
        if self.play_finished is None or not self.play_finished(done.site_id, done.id):
            log.info("playFinished %s from satellite %s: no play waits for it", done.id, done.site_id)

    def voices(self, ask: HermesGetVoices, catalog: VoiceCatalog) -> None:
        if self.speaks_for(ask.site_id):  # another site's TTS answers for that site
            self.publish(HermesVoices.answering(ask, catalog.names, set(catalog.registered_names)))
