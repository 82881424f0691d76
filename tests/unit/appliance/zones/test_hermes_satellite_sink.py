"""The satellite zone's sink: one WAV per announcement, the end waits for the satellite's playFinished,
a timeout is an AudioError naming the satellite, a cut announcement is never sent; and the settings."""

from __future__ import annotations

import io
import threading
import wave

import numpy as np
import pytest

from qwen3tts.appliance.zones.hermes_satellite import HermesSatelliteSink, SatelliteWaits
from qwen3tts.errors import AudioError, ConfigError
from qwen3tts.settings_loader import load_settings


class Satellite:
    """Records what the sink sends; answers playFinished at once, later (another thread) or never."""

    def __init__(self, waits: SatelliteWaits, answer: str = "at once") -> None:
        self.waits, self.answer = waits, answer
        self.sent: list[tuple[str, str, bytes]] = []
        self.answered = threading.Event()

    def send(self, site: str, request_id: str, wav: bytes) -> None:
        self.sent.append((site, request_id, wav))
        if self.answer == "at once":
            self._play_finished(site, request_id)
        elif self.answer == "later":
            threading.Timer(0.3, self._play_finished, (site, request_id)).start()

    def _play_finished(self, site: str, request_id: str) -> None:
        assert self.waits.play_finished(site, request_id)
        self.answered.set()


def sink_for(satellite: Satellite, timeout_s: float = 5.0, beats: list | None = None) -> HermesSatelliteSink:
    beat = (lambda: beats.append(1)) if beats is not None else (lambda: None)
    return HermesSatelliteSink("porch", satellite.send, satellite.waits, timeout_s=timeout_s, heartbeat=beat)


def test_one_announcement_is_one_wav_at_24_khz_holding_every_sample_written():
    satellite = Satellite(SatelliteWaits())
    sink = sink_for(satellite)
    sink.begin("door-1")
    blocks = [np.full(960, 0.25, np.float32), np.full(480, -0.5, np.float32)]
    for block in blocks:
        assert sink.write(block) is False
    sink.end()
    ((site, request_id, data),) = satellite.sent
    assert (site, request_id) == ("porch", "door-1")
    with wave.open(io.BytesIO(data)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
        pcm = np.frombuffer(wav.readframes(wav.getnframes()), "<i2") / 32767.0
    np.testing.assert_allclose(pcm, np.concatenate(blocks), atol=1e-4)


def test_the_end_returns_only_after_the_satellite_says_it_played():
    satellite = Satellite(SatelliteWaits(), answer="later")
    sink = sink_for(satellite)
    sink.begin("door-2")
    sink.write(np.zeros(2400, np.float32))
    sink.end()
    assert satellite.answered.is_set()  # end() did not return before the playFinished


def test_the_heartbeat_goes_on_while_the_end_waits():
    # The satellite answers only once the waiting thread has beaten its heartbeat: no race to lose,
    # whichever thread runs first (a timer could fire before the wait began on a busy machine).
    satellite = Satellite(SatelliteWaits(), answer="never")
    beats: list = []

    def beat() -> None:
        beats.append(1)
        if len(beats) == 1:
            satellite._play_finished("porch", "door-3")

    sink = HermesSatelliteSink("porch", satellite.send, satellite.waits, timeout_s=30.0, heartbeat=beat)
    sink.begin("door-3")
    sink.write(np.zeros(2400, np.float32))
    sink.end()
    assert satellite.answered.is_set() and beats == [1]


def test_no_play_finished_within_the_audio_length_plus_the_timeout_is_an_error_naming_the_satellite():
    waits = SatelliteWaits()
    satellite = Satellite(waits, answer="never")
    sink = sink_for(satellite, timeout_s=0.2)
    sink.begin("door-3")
    sink.write(np.zeros(2400, np.float32))  # 0.1 s of audio
    with pytest.raises(AudioError, match=r"satellite porch sent no playFinished within 0\.3 s"):
        sink.end()
    assert waits.play_finished("porch", "door-3") is False  # nothing waits for it any more


def test_a_cut_announcement_is_not_sent_and_an_unknown_play_finished_wakes_nothing():
    waits = SatelliteWaits()
    satellite = Satellite(waits)
    sink = sink_for(satellite)
    sink.begin("cut-1")
    sink.write(np.zeros(100, np.float32))
    sink.end(complete=False)
    assert satellite.sent == []
    assert waits.play_finished("porch", "cut-1") is False
    assert waits.play_finished("attic", "door-1") is False


def settings_with(tmp_path, mqtt: dict, zones: list | None = None):
    import json

    path = tmp_path / "qwen3tts.yaml"
    path.write_text(json.dumps({"mqtt": mqtt, **({"zones": zones} if zones else {})}))
    return load_settings(path)


def test_satellites_load_and_bad_ones_are_config_errors_naming_the_key(tmp_path):
    loaded = settings_with(tmp_path, {"hermes": True, "hermes_satellites": ["porch", "attic"]})
    assert loaded.mqtt.hermes_satellites == ("porch", "attic")
    assert settings_with(tmp_path, {}).mqtt.hermes_satellites == ()
    cases = [
        ({"hermes_satellites": ["porch"]}, None, r"mqtt\.hermes_satellites: needs mqtt\.hermes"),
        ({"hermes": True, "hermes_satellites": ["a/b"]}, None, r"mqtt\.hermes_satellites\[0\]: expected"),
        ({"hermes": True, "hermes_satellites": ["ok", "+"]}, None, r"mqtt\.hermes_satellites\[1\]"),
        ({"hermes": True, "hermes_satellites": ["default"]}, None, r"\[0\]: 'default' is this box's own"),
        ({"hermes": True, "hermes_site_id": "base", "hermes_satellites": ["default"]}, None,
         r"\[0\]: 'default' is already the name of a zone"),
        ({"hermes": True, "hermes_satellites": ["hall"]}, [{"name": "hall", "output": "null"}],
         r"\[0\]: 'hall' is already the name of a zone"),
        ({"hermes": True, "hermes_satellites": ["porch", "porch"]}, None, r"\[1\]: 'porch' is already"),
        ({"hermes": True, "hermes_play_timeout": 0.1}, None, r"mqtt\.hermes_play_timeout"),
    ]  # fmt: skip
    for mqtt, zones, match in cases:
        with pytest.raises(ConfigError, match=match):
            settings_with(tmp_path, mqtt, zones)
