"""Where this appliance's topics live, and which MQTT 5 response topics it answers on.

`Topics` is `<prefix>/<site>/...` plus the optional bridges (Home Assistant discovery, Hermes) and the
zone topics `<prefix>/zone/<zone>/say` of this box's zones (without the site: every box that plays a
zone subscribes to the same topic).

A response topic is a publish topic chosen by whoever sent the request, published to with the
appliance's own credentials. Taken as given it could kill the publishing thread (a wildcard) or
make the appliance command another one (`qwen3tts/<other-site>/stop`). So an answer goes out only
to a valid topic name in our own reply tree `<prefix>/<site>/reply[/...]`, or under the configured
`mqtt.response_prefix`, and never to a command topic; anything else is ignored with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwen3tts.appliance.mqtt.payload import quote


@dataclass(frozen=True)
class Topics:
    """Where this appliance's topics live: `<prefix>/<site>/...` plus the optional bridges."""

    base: str
    discovery_prefix: str = "homeassistant"
    hermes: bool = False
    hermes_satellites: tuple[str, ...] = ()
    """siteIds of the Rhasspy satellites this box speaks for (zones of it): their playFinished is read."""
    response_prefix: str = ""
    """Besides `<base>/reply/...`, MQTT 5 response topics under this prefix are answered ("" none)."""
    zone_base: str = ""
    """`<prefix>/zone`: below it `<zone>/say` addresses one zone on every box that has it ("" none)."""
    zones: tuple[str, ...] = ()
    """The zones of this box whose zone topics it subscribes to."""

    def zone_say(self, zone: str) -> str:
        return f"{self.zone_base}/{zone}/say"

    def zone_of(self, topic: str) -> str | None:
        """The zone whose say topic `topic` is, None for any other topic."""
        if not self.zone_base:
            return None
        return next((zone for zone in self.zones if topic == self.zone_say(zone)), None)

    @property
    def ha_status(self) -> str:
        return f"{self.discovery_prefix}/status"

    @property
    def reply_base(self) -> str:
        """Our own tree for answers: `<base>/reply` and below."""
        return f"{self.base}/reply"


MAX_TOPIC_BYTES = 256
"""Longest response topic answered (MQTT allows 65535; nobody needs more than this)."""
COMMAND_SUFFIXES = ("/say", "/stop", "/volume/set", "/voice/set", "/set")


def refusal(topics: Topics, topic: str) -> str | None:
    """None if answers may be published to `topic`, else the reason they are not."""
    problem = _problem(topics, topic)
    return f"response topic {quote(topic, 80)} ignored: {problem}" if problem else None


def _problem(topics: Topics, topic: str) -> str | None:
    problem = _not_a_topic_name(topic)
    if problem:
        return problem
    allowed = [topics.reply_base, *([topics.response_prefix.rstrip("/")] if topics.response_prefix else [])]
    if not any(topic == p or topic.startswith(p + "/") for p in allowed):
        return f"not under {' or '.join(a + '/' for a in allowed)}"
    if topic.endswith(COMMAND_SUFFIXES) or topic.startswith(("hermes/", topics.discovery_prefix + "/")):
        return "it names a command or discovery topic"
    return None


def _not_a_topic_name(topic: str) -> str | None:
    if not topic:
        return "empty"
    try:
        size = len(topic.encode("utf-8"))
    except UnicodeEncodeError:
        return "not valid Unicode"
    if size > MAX_TOPIC_BYTES:
        return f"longer than {MAX_TOPIC_BYTES} bytes"
    if "+" in topic or "#" in topic:
        return "a wildcard is not a topic name"
    if topic.startswith("$"):
        return "$ topics are the broker's"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in topic):
        return "contains a control character"
    if "//" in topic or topic.endswith("/"):
        return "has an empty level"
    return None
