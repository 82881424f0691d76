"""Each zone's ducking, from its settings: the backends its `ducking` section names (zone_ducking.py)."""

from __future__ import annotations

from pathlib import Path

from qwen3tts.appliance.zones.ducking.alsa import AlsaMixerDuck
from qwen3tts.appliance.zones.ducking.mqtt import MqttDuck, Publish
from qwen3tts.appliance.zones.ducking.snapcast import SnapcastDuck
from qwen3tts.appliance.zones.ducking.zone_ducking import DuckBackend, ZoneDucking
from qwen3tts.settings import Settings, ZoneSettings


def zone_duckings(settings: Settings, restore_dir: Path, publish: Publish) -> dict[str, ZoneDucking]:
    """{zone: its ducking} of every zone that lowers anything (none for the implicit `default` zone)."""
    return {zone.name: zone_ducking(zone, restore_dir, publish) for zone in settings.zones
            if zone.ducking.enabled}  # fmt: skip


def zone_ducking(zone: ZoneSettings, restore_dir: Path, publish: Publish) -> ZoneDucking:
    ducking = zone.ducking
    backends: list[DuckBackend] = []
    if ducking.mqtt_topic:
        backends.append(MqttDuck(zone.name, ducking.mqtt_topic, publish, restore_dir))
    if ducking.snapcast.clients:
        backends.append(SnapcastDuck(zone.name, ducking.snapcast, restore_dir))
    if ducking.alsa_mixer.control:
        backends.append(AlsaMixerDuck(zone.name, ducking.alsa_mixer, restore_dir))
    return ZoneDucking(zone.name, ducking, backends)
