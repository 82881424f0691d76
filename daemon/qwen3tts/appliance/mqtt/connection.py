"""What the MQTT client connects with: the appliance's topics, a stable client id, the TLS context.

Plain functions of the `mqtt` settings, without paho (client.py is the only module that imports it).
"""

from __future__ import annotations

import hashlib
import socket
import ssl
from pathlib import Path

from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.errors import ConfigError
from qwen3tts.settings import MqttSettings


def site_name(settings: MqttSettings) -> str:
    return settings.site or socket.gethostname().split(".")[0]


def topics_for(settings: MqttSettings, site: str | None = None, zones: tuple[str, ...] = ()) -> Topics:
    """The appliance's topics: `<prefix>/<site>` with the configured bridges and its zones' topics."""
    return Topics(
        base=f"{settings.prefix}/{site or site_name(settings)}",
        discovery_prefix=settings.discovery_prefix,
        hermes=settings.hermes,
        hermes_satellites=settings.hermes_satellites if settings.hermes else (),
        response_prefix=settings.response_prefix,
        zone_base=f"{settings.prefix}/zone",
        zones=zones,
    )


def stable_client_id(settings: MqttSettings, site: str, machine_id: Path = Path("/etc/machine-id")) -> str:
    """The configured id, else one derived from the machine id and site (stable across restarts)."""
    if settings.client_id:
        return settings.client_id
    try:
        seed = machine_id.read_text().strip()
    except OSError:
        seed = socket.gethostname()
    return "qwen3tts-" + hashlib.sha256(f"{seed}/{site}".encode()).hexdigest()[:12]


def tls_context(settings: MqttSettings) -> ssl.SSLContext:
    """The TLS context of the `mqtt.tls_*` files; ConfigError naming the key of one that cannot load."""
    try:
        context = ssl.create_default_context(cafile=str(settings.tls_ca))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"mqtt.tls_ca: cannot load {settings.tls_ca}: {exc}") from exc
    if settings.tls_cert is not None:
        key = str(settings.tls_key) if settings.tls_key else None
        try:
            context.load_cert_chain(str(settings.tls_cert), key)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"mqtt.tls_cert: cannot load {settings.tls_cert}: {exc}") from exc
    return context
