"""The sink of each zone, from its settings: alsa, wav, null or snapcast (zones/snapcast_sink.py).

No zones configured is one zone `default` on the `audio` section's sink, as before zones existed. Each
Hermes satellite is one more zone, named by its siteId (zones/hermes_satellite.py). An
explicitly configured ALSA device that cannot be opened is an AudioError at start, as for `audio.sink:
alsa`; a Snapcast zone never fails the start: an unreachable snapserver leaves the sink `lost` and
retried with backoff (doctor reports it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from qwen3tts.appliance.audio.alsa import AlsaSink, open_sink
from qwen3tts.appliance.audio.loudness import LoudnessTarget
from qwen3tts.appliance.audio.sinks import NullSink, Sink, WavSink
from qwen3tts.appliance.audio.track import DEFAULT_ZONE
from qwen3tts.appliance.zones.hermes_satellite import HermesSatelliteSink, SatelliteWaits
from qwen3tts.appliance.zones.snapcast_sink import SnapcastSink
from qwen3tts.settings import MqttSettings, Settings, ZoneSettings

StateCallback = Callable[[str, str, str], None]
"""on_state(zone, state, detail): a zone's output went `ok` or `lost`."""


def zone_names(settings: Settings) -> tuple[str, ...]:
    """The zones of this box, in configuration order (`default` when none is configured)."""
    return tuple(zone.name for zone in settings.zones) or (DEFAULT_ZONE,)


def zone_loudness(settings: Settings, zone: str) -> LoudnessTarget | None:
    """The loudness target of `zone`: its own `loudness` section, else audio.loudness (None: off)."""
    own = next((z.loudness for z in settings.zones if z.name == zone), None)
    return LoudnessTarget.from_settings(own or settings.audio.loudness)


def open_zone_sinks(settings: Settings, restore_dir: Path, on_state: StateCallback) -> dict[str, Sink]:
    """{zone: its opened sink}; what was opened is closed again when a later zone fails to open."""
    if not settings.zones:
        return {DEFAULT_ZONE: open_sink(settings.audio, on_state=_for(on_state, DEFAULT_ZONE))}
    sinks: dict[str, Sink] = {}
    try:
        for zone in settings.zones:
            sinks[zone.name] = open_zone_sink(zone, settings, restore_dir, on_state)
    except BaseException:
        for sink in sinks.values():
            sink.close()
        raise
    return sinks


def open_zone_sink(
    zone: ZoneSettings, settings: Settings, restore_dir: Path, on_state: StateCallback
) -> Sink:
    report = _for(on_state, zone.name)
    if zone.output == "null":
        return NullSink()
    if zone.output == "wav":
        return WavSink(zone.wav_dir, realtime=zone.wav_realtime)
    if zone.output == "snapcast":
        return SnapcastSink(zone.name, zone.snapcast, restore_dir, on_state=report).open()
    audio = settings.audio
    return AlsaSink(
        zone.device, block_ms=audio.block_ms, stall_timeout_s=audio.stall_timeout_s, on_state=report
    ).open()


def satellite_sinks(
    mqtt: MqttSettings,
    send: Callable[[str, str, bytes], object],
    waits: SatelliteWaits,
    heartbeat_for: Callable[[str], Callable[[], None]],
) -> dict[str, Sink]:
    """{siteId: its sink}: each Hermes satellite (mqtt.hermes_satellites) is a zone named by its siteId."""
    timeout = mqtt.hermes_play_timeout
    return {
        site: HermesSatelliteSink(site, send, waits, timeout_s=timeout, heartbeat=heartbeat_for(site))
        for site in mqtt.hermes_satellites
    }


def _for(on_state: StateCallback, zone: str) -> Callable[[str, str], None]:
    return lambda state, detail: on_state(zone, state, detail)
