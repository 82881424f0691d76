"""The broker, topics, Hermes and the pool."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class MqttSettings:
    """The MQTT broker and topic contract."""

    host: str = "127.0.0.1"
    """Broker host name or address. Default 127.0.0.1."""
    port: int = field(default=1883, metadata={"min": 1, "max": 65535})
    """Broker TCP port (8883 is usual with TLS). Default 1883."""
    prefix: str = field(default="qwen3tts", metadata={"topic": "level"})
    """First topic level. Default qwen3tts."""
    site: str = field(default="", metadata={"topic": "level"})
    """Second topic level naming this appliance; empty means the host name. Default empty."""
    client_id: str = ""
    """MQTT client id; empty derives a stable one from /etc/machine-id. Default empty."""
    protocol: Literal["5", "3.1.1"] = "5"
    """Preferred protocol; 5 falls back to 3.1.1 when the broker refuses it. Default 5."""
    keepalive: int = field(default=30, metadata={"min": 5})
    """Keepalive interval in seconds. Default 30 s."""
    username: str = ""
    """User name; empty for anonymous. Default empty."""
    password_file: Path | None = None
    """File holding the password; else $CREDENTIALS_DIRECTORY/mqtt-password when present. Default none."""
    tls_ca: Path | None = None
    """CA certificate file; setting it enables TLS. Default none."""
    tls_cert: Path | None = None
    """Client certificate file for mutual TLS. Default none."""
    tls_key: Path | None = None
    """Client key file for mutual TLS. Default none."""
    max_queued_messages: int = field(default=1000, metadata={"min": 200})
    """Bound on outgoing messages not yet acknowledged by the broker (also while disconnected); reading
    pauses at a quarter of it so no answer is dropped. At least 200 (the rest covers the answers of the
    messages already handed over). Default 1000."""
    receive_maximum: int = field(default=20, metadata={"min": 1, "max": 32})
    """MQTT 5 Receive Maximum sent in CONNECT: QoS 1 messages the broker may send before the daemon has
    acknowledged one (it acknowledges each once it is spooled); the broker queues the rest for this
    session, up to its own max_queued_messages, past which it drops them (docs/operations.md, "What the
    broker may drop"). 20 is mosquitto's own in-flight default; at most 32, so the answers of every
    message in flight (up to four each) fit in the smallest max_queued_messages (200) beside the quarter
    where reading pauses. MQTT 3.1.1 has no such field: the broker's max_inflight_messages rules.
    Default 20."""
    session_expiry: int = field(default=3600, metadata={"min": 0})
    """MQTT 5 session expiry in seconds, so QoS 1 commands wait for a restart. Default 3600 s."""
    discovery: bool = True
    """Publish Home Assistant discovery configs. Default true."""
    discovery_prefix: str = field(default="homeassistant", metadata={"topic": "prefix"})
    """Home Assistant discovery prefix. Default homeassistant."""
    hermes: bool = False
    """Also serve the Hermes topics hermes/tts/say -> sayFinished. Default false."""
    hermes_site_id: str = "default"
    """Hermes siteId this appliance answers to. Default default."""
    hermes_chime: bool = False
    """Play the announcement chime before Hermes dialogue replies. Default false."""
    hermes_satellites: tuple[str, ...] = field(default=(), metadata={"may_be_empty": True})
    """Hermes siteIds of Rhasspy satellites this box speaks for: a hermes/tts/say for one of them is
    synthesised here and its WAV published to hermes/audioServer/<siteId>/playBytes/<id>; each is also
    a zone of this box named by the siteId (letters, digits, . _ -). Needs hermes. Default none."""
    hermes_play_timeout: float = field(default=10.0, metadata={"min": 0.5, "max": 600.0})
    """Seconds a satellite may take beyond the length of the audio to send its playFinished; after that
    sayFinished goes out anyway and the announcement ends in an `error` naming the zone. Default 10 s."""
    response_prefix: str = field(default="", metadata={"topic": "prefix"})
    """MQTT 5 response topics answered besides <prefix>/<site>/reply/...; empty for none. Default empty."""
    pool: str = field(default="", metadata={"topic": "level"})
    """Synthesis pool (MQTT 5 shared subscription group) this box joins: it also speaks announcements
    published to <pool_topic>/say, each taken by one member of the group; empty joins none. Default empty."""
    pool_topic: str = field(default="", metadata={"topic": "prefix"})
    """Topic of the pool: members read <pool_topic>/say; empty means <prefix>/pool. Default empty."""
    pool_max_waiting: int = field(default=2, metadata={"min": 1})
    """Pooled announcements are taken only while fewer announcements than this wait in the queue; the
    rest stay unacknowledged at the broker, where a peer rescues them if this box dies. Default 2."""
    pool_max_delay: float = field(default=30.0, metadata={"min": 1.0})
    """Seconds of estimated audio waiting ahead at which the box also leaves the round robin (the broker
    sends new pooled announcements to the others) until it is below again. Default 30 s."""
