"""The root of the tree: every section, plus the thermal governor and logging."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from qwen3tts.errors import ConfigError
from qwen3tts.settings.audio import AudioSettings
from qwen3tts.settings.engine import DeviceSettings, EngineSettings, ModelSettings
from qwen3tts.settings.mqtt import MqttSettings
from qwen3tts.settings.servers import ServersSettings
from qwen3tts.settings.speech import AnnouncementSettings, CacheSettings, TextSettings, VoiceSettings
from qwen3tts.settings.zones import ZONE_NAME_PATTERN, ZoneSettings


@dataclass(frozen=True)
class ThermalSettings:
    """The governor that shrinks the batch when the chip runs hot."""

    enabled: bool = True
    """Run the thermal governor. Default true."""
    sysfs_root: Path = Path("/sys")
    """Root of sysfs (tests point it at a fake tree). Default /sys."""
    interval_s: float = field(default=1.0, metadata={"min": 0.05})
    """Sampling interval in seconds. Default 1 s."""
    ewma_alpha: float = field(default=0.3, metadata={"min": 0.01, "max": 1.0})
    """Smoothing factor of the temperature EWMA. Default 0.3."""
    zone_types: tuple[str, ...] = ("x86_pkg_temp", "TCPU")
    """Thermal zone types that count. Default x86_pkg_temp, TCPU."""
    t_hot_c: float = field(default=85.0, metadata={"min": 20.0, "max": 150.0})
    """Step-down temperature in °C when no passive trip point exists. Default 85 °C."""
    trip_margin_c: float = field(default=5.0, metadata={"min": 0.0})
    """T_hot = lowest passive trip point minus this, in °C. Default 5 °C."""
    hysteresis_c: float = field(default=5.0, metadata={"min": 0.0})
    """Step up only below T_hot minus this, in °C. Default 5 °C."""
    dwell_s: float = field(default=30.0, metadata={"min": 0.0})
    """Seconds below T_hot - hysteresis before stepping up one level. Default 30 s."""
    batch_levels: tuple[int, ...] = (4, 2, 1)
    """Batch limits from cool to hot. Default 4, 2, 1."""


@dataclass(frozen=True)
class LoggingSettings:
    """Operator logs."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Log level. Default INFO."""


@dataclass(frozen=True)
class Settings:
    """The whole configuration."""

    model: ModelSettings = field(default_factory=ModelSettings)
    devices: DeviceSettings = field(default_factory=DeviceSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    voice: VoiceSettings = field(default_factory=VoiceSettings)
    text: TextSettings = field(default_factory=TextSettings)
    mqtt: MqttSettings = field(default_factory=MqttSettings)
    announcements: AnnouncementSettings = field(default_factory=AnnouncementSettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    audio: AudioSettings = field(default_factory=AudioSettings)
    thermal: ThermalSettings = field(default_factory=ThermalSettings)
    servers: ServersSettings = field(default_factory=ServersSettings)
    logging: LoggingSettings = field(default_factory=LoggingSettings)
    zones: tuple[ZoneSettings, ...] = ()
    """The zones of this box (docs/operations.md). Empty: one zone `default`, the `audio` section's sink."""

    def __post_init__(self) -> None:
        names = [zone.name for zone in self.zones]
        for index, zone in enumerate(self.zones):
            if not re.fullmatch(ZONE_NAME_PATTERN, zone.name):
                raise ConfigError(
                    f"zones[{index}].name: expected 1-64 of A-Z a-z 0-9 . _ -, got {zone.name!r}"
                )
            if names.index(zone.name) != index:
                first = names.index(zone.name)
                raise ConfigError(f"zones[{index}].name: {zone.name!r} is already the name of zones[{first}]")
        _check_satellites(self.mqtt, tuple(names) or ("default",))


def _check_satellites(mqtt: MqttSettings, zones: tuple[str, ...]) -> None:
    """Satellite siteIds become zone names and topic levels: they must be valid and distinct."""
    if mqtt.hermes_satellites and not mqtt.hermes:
        raise ConfigError("mqtt.hermes_satellites: needs mqtt.hermes: true")
    for index, site in enumerate(mqtt.hermes_satellites):
        key = f"mqtt.hermes_satellites[{index}]"
        if not re.fullmatch(ZONE_NAME_PATTERN, site):
            raise ConfigError(f"{key}: expected 1-64 of A-Z a-z 0-9 . _ -, got {site!r}")
        if site == mqtt.hermes_site_id:
            raise ConfigError(f"{key}: {site!r} is this box's own siteId (mqtt.hermes_site_id)")
        if site in zones or mqtt.hermes_satellites.index(site) != index:
            raise ConfigError(f"{key}: {site!r} is already the name of a zone of this box")
