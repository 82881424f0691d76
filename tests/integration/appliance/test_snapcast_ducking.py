"""Snapcast volume ducking against a real snapserver and two real `snapclient --player file` on loopback.

While a track plays in the zone, the zone's Snapcast client ("left") is lowered by the configured level
(its volume read back over JSON-RPC, and the music in its file quieter), the other client keeps its
volume, and both are back at what they had after the last sample; a barge-in raises it too; what a crash
left lowered is raised by the next start's `recover()`; a snapserver that is down is logged once and the
announcement plays on.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest
from snapcast_rig import Snapserver, music_level, running_rig, wait_until

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.sinks import WavSink
from qwen3tts.appliance.audio.track import Track
from qwen3tts.appliance.zones.ducking.snapcast import SnapcastDuck, client_volumes
from qwen3tts.appliance.zones.ducking.zone_ducking import ZoneDucking
from qwen3tts.appliance.zones.snapcast_rpc import SnapcastControl
from qwen3tts.settings import AudioSettings, DuckingSettings, SnapcastDuckSettings

AUDIO = AudioSettings(lead_in_ms=0, tail_ms=0, fade_ms=10, block_ms=40)


@pytest.fixture
def snapcast(tmp_path):
    with running_rig(tmp_path) as (server, clients):
        control = SnapcastControl("127.0.0.1", server.control_port)
        wait_until(lambda: len(client_volumes(control.status(), ("*",))) == 2)
        for client in ("left", "right"):
            control.call("Client.SetVolume", {"id": client, "volume": {"percent": 80}})
        yield server, clients, control


def ducking(server: Snapserver, tmp_path, level_db: float = -20.0, port: int | None = None) -> ZoneDucking:
    settings = DuckingSettings(level_db=level_db, ramp_in_ms=200, ramp_out_ms=200)
    backend = SnapcastDuck("hall", SnapcastDuckSettings(control_port=port or server.control_port,
                                                        clients=("left",)), tmp_path / "ducking")  # fmt: skip
    return ZoneDucking("hall", settings, [backend])


def seconds_track(label: str, seconds: float) -> Track:
    track = Track(label)
    track.put(np.zeros(int(24000 * seconds), dtype=np.float32))  # silence: the music is what we listen to
    track.close()
    return track


def volumes(control: SnapcastControl) -> dict[str, int]:
    return client_volumes(control.status(), ("*",))


def test_the_zones_client_is_lowered_while_it_plays_and_restored_after(snapcast, tmp_path):
    server, (left, _right), control = snapcast
    duck = ducking(server, tmp_path)
    playback = Playback(
        WavSink(tmp_path / "wav", realtime=True), AUDIO, ChimeSet.silent(), zone="hall", ducking=duck
    )
    track = seconds_track("a1", 3.0)
    during: list[dict[str, int]] = []
    player = threading.Thread(target=playback.play, args=(track,))
    wait_until(lambda: left.frames() > 96000)  # the music plays
    before_music = music_level(left.mono()[-24000:])
    player.start()
    wait_until(lambda: track.zones()["hall"].t_first_audio is not None)
    during.append(volumes(control))
    time.sleep(1.5)  # snapclient's buffer (1 s) plays the lowered music
    lowered_music = music_level(left.mono()[-12000:])
    player.join(20)
    assert during[0] == {"left": 8, "right": 80}  # 80 % * 10^(-20/20)
    assert volumes(control) == {"left": 80, "right": 80}
    assert lowered_music < before_music * 0.5, (before_music, lowered_music)
    assert not duck.backends[0].record.pending()


def test_a_barge_in_raises_it_again(snapcast, tmp_path):
    server, _, control = snapcast
    sink = WavSink(tmp_path / "wav", realtime=True)
    playback = Playback(sink, AUDIO, ChimeSet.silent(), zone="hall", ducking=ducking(server, tmp_path))
    track = seconds_track("cut", 10.0)
    player = threading.Thread(target=playback.play, args=(track,))
    player.start()
    wait_until(lambda: track.zones()["hall"].t_first_audio is not None)
    assert volumes(control)["left"] == 8
    track.cut()
    player.join(10)
    assert not player.is_alive() and volumes(control) == {"left": 80, "right": 80}


def test_what_a_crash_left_lowered_is_raised_at_the_next_start(snapcast, tmp_path):
    server, _, control = snapcast
    crashed = SnapcastDuck("hall", SnapcastDuckSettings(control_port=server.control_port, clients=("left",)),
                           tmp_path / "ducking")  # fmt: skip
    crashed.lower("a1", -20.0, 0)
    crashed.step(-20.0)  # ... and the daemon dies here
    assert volumes(control)["left"] == 8
    ducking(server, tmp_path).recover()  # the next start
    assert volumes(control) == {"left": 80, "right": 80}
    assert not crashed.record.pending()


def test_a_snapserver_that_is_down_is_logged_once_and_the_announcements_play(snapcast, tmp_path, caplog):
    server, _, _ = snapcast
    down = ducking(server, tmp_path, port=1)  # nothing listens on port 1
    playback = Playback(
        WavSink(tmp_path / "wav", realtime=True), AUDIO, ChimeSet.silent(), zone="hall", ducking=down
    )
    with caplog.at_level(logging.WARNING):
        for label in ("d1", "d2"):
            track = seconds_track(label, 0.2)
            playback.play(track)
            assert track.played_out and track.error is None
    assert len([r for r in caplog.records if "ducking on snapcast-volume" in r.getMessage()]) == 1
