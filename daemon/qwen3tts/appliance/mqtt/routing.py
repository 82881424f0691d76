"""Which topic carries which message: what the appliance subscribes to, and the message class of an
inbound topic (validate.py reads the payload).

The one table between topics (topics.py) and typed messages (messages.py, controls.py, hermes.py), so
neither of those needs the other.
"""

from __future__ import annotations

from qwen3tts.appliance.mqtt.controls import SetVoice, SetVolume, Stop
from qwen3tts.appliance.mqtt.hermes import (
    GET_VOICES_TOPICS,
    HermesGetVoices,
    HermesPlayFinished,
    HermesSay,
    play_finished_topic,
)
from qwen3tts.appliance.mqtt.messages import HomeAssistantStatus, Message, Say
from qwen3tts.appliance.mqtt.topics import Topics

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
