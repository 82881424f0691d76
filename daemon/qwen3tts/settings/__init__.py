"""The one typed configuration of qwen3tts: a frozen dataclass tree.

Order of precedence: defaults here -> the YAML file (`--config`, default config/qwen3tts.yaml shape)
-> command-line overrides (`--set key.path=value`) -> secrets read from files (never from YAML).
Every field carries a docstring with its unit and default; `config/qwen3tts.yaml` is the commented copy.
Derived runtime facts (the block count actually allocated, compiled shapes) do not live here.

One section per file; everything is re-exported here, so `from qwen3tts.settings import X` stays the
one import callers need.
"""

from qwen3tts.settings.audio import AudioSettings, LoudnessSettings
from qwen3tts.settings.engine import VIRTUAL_DEVICES, DeviceSettings, EngineSettings, ModelSettings
from qwen3tts.settings.mqtt import MqttSettings
from qwen3tts.settings.secrets import read_http_token, read_mqtt_password
from qwen3tts.settings.servers import (
    HttpServerSettings,
    RendererServerSettings,
    ServersSettings,
    WyomingServerSettings,
)
from qwen3tts.settings.speech import (
    AnnouncementSettings,
    CacheSettings,
    Priority,
    TextSettings,
    VoiceSettings,
)
from qwen3tts.settings.tree import LoggingSettings, Settings, ThermalSettings
from qwen3tts.settings.zones import (
    ZONE_NAME_PATTERN,
    AlsaMixerDuckSettings,
    DuckingSettings,
    SnapcastDuckSettings,
    SnapcastSettings,
    ZoneSettings,
)

__all__ = [
    "VIRTUAL_DEVICES",
    "ZONE_NAME_PATTERN",
    "AlsaMixerDuckSettings",
    "AnnouncementSettings",
    "AudioSettings",
    "CacheSettings",
    "DeviceSettings",
    "DuckingSettings",
    "EngineSettings",
    "HttpServerSettings",
    "LoggingSettings",
    "LoudnessSettings",
    "ModelSettings",
    "MqttSettings",
    "Priority",
    "RendererServerSettings",
    "ServersSettings",
    "Settings",
    "SnapcastDuckSettings",
    "SnapcastSettings",
    "TextSettings",
    "ThermalSettings",
    "VoiceSettings",
    "WyomingServerSettings",
    "ZoneSettings",
    "read_http_token",
    "read_mqtt_password",
]
