"""Each zone's audio output: opened for the service, and its state as the service reports it (status,
/metrics, the log)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.mqtt.hermes import HermesPlayBytes
from qwen3tts.appliance.zones.ducking.backends import zone_duckings
from qwen3tts.appliance.zones.hermes_satellite import SatelliteWaits
from qwen3tts.appliance.zones.outputs import open_zone_sinks, satellite_sinks, zone_loudness
from qwen3tts.paths import ducking_restore_dir, snapcast_restore_dir
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)


class OutputStates:
    """Which zones' outputs are not ok (`lost`, ...); `changed()` is each sink's state callback."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.states: dict[str, str] = {}  # zone -> its output's state, when not ok
        self._on_change = on_change

    def changed(self, zone: str, state: str, detail: str) -> None:
        if state == "ok":
            self.states.pop(zone, None)
        else:
            self.states[zone] = state
        log.log(
            logging.INFO if state == "ok" else logging.WARNING, "zone %s output %s: %s", zone, state, detail
        )
        self._on_change()

    def first_problem(self) -> str:
        """`ok`, or the state of the first zone whose output is not ok."""
        return next(iter(self.states.values()), "ok")

    def summary(self, sinks: Mapping) -> str:
        """`<sink>:<state>` on a box with one zone; `<zone>=<sink>:<state>, ...` with several."""
        parts = {zone: f"{sink.name}:{self.states.get(zone, 'ok')}" for zone, sink in sinks.items()}
        if list(parts) == ["default"]:
            return parts["default"]
        return ", ".join(f"{zone}={part}" for zone, part in parts.items())


def audio_worker(zone: str) -> str:
    """The supervised worker (and heartbeat) name of a zone's audio thread: `audio` for the one default."""
    return "audio" if zone == "default" else f"audio:{zone}"


def open_sinks(settings: Settings, outputs: OutputStates, publish, waits: SatelliteWaits, beat) -> dict:
    """{zone: its sink}: the configured zones (or the one default), then one per Hermes satellite, whose
    WAVs go out through `publish` and whose audio thread beats `beat(<its worker name>)` while it waits."""
    sinks = open_zone_sinks(settings, snapcast_restore_dir(), outputs.changed)
    send = lambda site, request, wav: publish(HermesPlayBytes(site, request, wav))  # noqa: E731
    return sinks | satellite_sinks(settings.mqtt, send, waits, lambda zone: beat(audio_worker(zone)))


def zone_playbacks(settings: Settings, chimes: ChimeSet, sinks: Mapping, beat, on_end, publish_duck) -> dict:
    """{zone: its audio thread's Playback}: with the zone's loudness target and its ducking."""
    duckings = zone_duckings(settings, ducking_restore_dir(), publish_duck)
    return {
        zone: Playback(sink, settings.audio, chimes, heartbeat=beat(audio_worker(zone)), on_end=on_end,
                       zone=zone, ducking=duckings.get(zone), loudness=zone_loudness(settings, zone))
        for zone, sink in sinks.items()
    }  # fmt: skip
