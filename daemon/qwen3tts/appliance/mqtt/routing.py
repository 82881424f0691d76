"""Which topic carries which message: what the appliance subscribes to and how an inbound topic is parsed.

The one table between topics (topics.py) and typed messages (messages.py, controls.py, hermes.py), so
neither of those needs the other.
"""

from __future__ import annotations

from dataclasses import replace

from qwen3tts.appliance.mqtt.controls import SetVoice, SetVolume, Stop
from qwen3tts.appliance.mqtt.hermes import (
    GET_VOICES_TOPICS,
    HermesGetVoices,
    HermesPlayFinished,
    HermesSay,
    play_finished_topic,
)
from qwen3tts.appliance.mqtt.messages import (
    HomeAssistantStatus,
    Inbound,
    Message,
    Say,
)
from qwen3tts.appliance.mqtt.payload import quote
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.errors import RequestError

COMMANDS: tuple[type[Message], ...] = (Say, Stop, SetVolume, SetVoice)
"""The commands under `<base>/`."""


def subscriptions(topics: Topics) -> list[tuple[str, bool]]:
    """(topic filter, drop retained messages at subscribe) for every topic the appliance reads."""
    subs = [(cls.topic_for(topics.base), True) for cls in COMMANDS]
    subs += [(topics.zone_say(zone), True) for zone in topics.zones]
    subs.append((topics.ha_status, False))
    if topics.hermes:
        subs.append((HermesSay.TOPIC, True))
        subs += [(topic, True) for topic in GET_VOICES_TOPICS]
        subs += [(play_finished_topic(site), True) for site in topics.hermes_satellites]
    return subs


def inbound_type(topics: Topics, topic: str) -> type[Message] | None:
    """The message class of a topic we subscribe to, None for any other topic."""
    for cls in COMMANDS:
        if topic == cls.topic_for(topics.base):
            return cls
    if topics.zone_of(topic) is not None:
        return Say
    if topic == topics.ha_status:
        return HomeAssistantStatus
    if not topics.hermes:
        return None
    if topic == HermesSay.TOPIC:
        return HermesSay
    if topic in GET_VOICES_TOPICS:
        return HermesGetVoices
    if any(topic == play_finished_topic(site) for site in topics.hermes_satellites):
        return HermesPlayFinished
    return None


def parse_inbound(topics: Topics, inbound: Inbound, *, say_max_bytes: int = 65536) -> Message:
    """The typed message for a message that arrived on one of `subscriptions(topics)`.

    The size limit of the topic is checked first, so an oversized payload is never decoded.
    """
    cls = inbound_type(topics, inbound.topic)
    if cls is None:
        raise RequestError(f"no handler for topic {quote(inbound.topic, 80)}")
    limit = cls.max_bytes or say_max_bytes
    if len(inbound.payload) > limit:
        raise RequestError(f"payload too large ({len(inbound.payload)} bytes > {limit})")
    message = cls.from_mqtt(inbound.topic, inbound.payload, inbound)
    zone = topics.zone_of(inbound.topic)
    return message if zone is None else _for_zone(message, zone)


def _for_zone(say: Say, zone: str) -> Say:
    """A say on `<prefix>/zone/<zone>/say` is for that zone only: a `zones` field there must name
    just that zone (a message on one zone's topic never reaches another zone)."""
    if say.zones not in ((), (zone,)):
        raise RequestError(f"field 'zones' {list(say.zones)} disagrees with the zone topic of {quote(zone)}")
    return replace(say, zones=(zone,))
