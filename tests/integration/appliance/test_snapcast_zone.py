"""A Snapcast zone against a real snapserver and two real `snapclient --player file` on loopback.

The zone's own sink under its own Playback plays a noise burst; the clients' files must hold it (found
by cross-correlation), played at the same instant by both, and the music that played on their group
before must come back after it. A snapserver restart mid-stream fails that zone's play and no other
zone's; a record a crash left behind is switched back at the next start; a snapserver that is down at
start leaves the sink `lost` (never an exception) until it comes up.
"""

from __future__ import annotations

import itertools
import threading
import time

import numpy as np
import pytest
import soxr
from snapcast_rig import Snapserver, Timeline, locate, music_level, running_rig, wait_until

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.sinks import NullSink
from qwen3tts.appliance.audio.track import Track
from qwen3tts.appliance.zones.restore import RestoreRecord
from qwen3tts.appliance.zones.snapcast_rpc import groups_for
from qwen3tts.appliance.zones.snapcast_sink import LEAD_S, SnapcastSink
from qwen3tts.errors import AudioError
from qwen3tts.settings import AudioSettings, SnapcastSettings

BURST = np.random.default_rng(11).uniform(-0.5, 0.5, 36000).astype(np.float32)  # 1.5 s at 24 kHz
AUDIO = AudioSettings(lead_in_ms=200, tail_ms=200, fade_ms=10, block_ms=40)
MAX_SKEW_S = 0.008
"""Snapcast itself keeps clients well under 1 ms apart; the rest is our file-growth timeline on a busy box."""
STALL_S = 0.125
"""A stall of the audio thread a loaded box must absorb without a gap: one of about 120 ms cut an announcement
in the test suite when the writes ran 50 ms ahead (snapcast_sink.LEAD_S)."""


@pytest.fixture
def snapcast(tmp_path):
    with running_rig(tmp_path) as rig:
        yield rig


def settings_for(server: Snapserver) -> SnapcastSettings:
    return SnapcastSettings(
        control_port=server.control_port, source=server.tcp_source, stream="announcements"
    )


def burst_track(label: str, repeats: int = 1) -> Track:
    track = Track(label)
    track.attach(("snap", "other"))
    track.put(np.tile(BURST, repeats))
    track.close()
    return track


def streams(sink: SnapcastSink) -> set[str]:
    return set(groups_for(sink.control.status(), ("*",)).values())


def test_both_clients_hear_the_announcement_at_the_same_instant_and_the_music_comes_back(snapcast, tmp_path):
    server, clients = snapcast
    sink = SnapcastSink("snap", settings_for(server), tmp_path / "restore").open()
    assert sink.state == "ok"
    wait_until(lambda: all(c.frames() > 48000 for c in clients))  # both clients play the music
    assert streams(sink) == {"music"}
    timeline = Timeline(clients).start()
    starts = [c.frames() for c in clients]
    t_begin = time.monotonic()
    track = burst_track("burst")
    Playback(sink, AUDIO, ChimeSet.silent(), zone="snap").play(track)
    assert track.zones()["snap"].error is None
    assert streams(sink) == {"music"}  # switched back after the last sample
    time.sleep(1.5)  # the music plays again, through the clients' buffer
    timeline.stop()
    needle = soxr.resample(BURST, 24000, 48000)
    heard = []
    for client, start in zip(clients, starts, strict=True):
        played = client.mono()[start:]
        offset, score = locate(played, needle)
        assert score > 0.8, f"the burst is not in what {client.host_id} played (correlation {score:.2f})"
        heard.append(timeline.played_at(client, start + offset, (t_begin, t_begin + 6.0)))
        after = played[offset + len(needle) :][-24000:]  # the last 0.5 s: the switch back may take a moment
        assert len(after) == 24000 and music_level(after) > 0.2, (
            f"the music did not come back on {client.host_id}"
        )
    skew = abs(heard[0] - heard[1])
    assert skew < MAX_SKEW_S, f"the clients played the burst {skew * 1000:.1f} ms apart"
    assert not RestoreRecord(tmp_path / "restore", "snap").pending()


def test_an_audio_thread_that_stalls_for_less_than_the_lead_leaves_no_gap(snapcast, tmp_path):
    """snapserver reads a source at its own pace and, when a read comes late, restarts its timeline: what
    the clients play gets a gap. A loaded box stalls the audio thread now and then; the writes run
    `LEAD_S` ahead of real time, so a stall shorter than that finds the data already in the source."""
    assert STALL_S < LEAD_S / 1.5  # the rest of the lead: the box's own scheduling delays
    server, clients = snapcast
    pauses = itertools.count()

    def sleep_with_a_stall(seconds: float) -> None:  # the 10th pause, mid-burst, runs late by STALL_S
        time.sleep(seconds + (STALL_S if next(pauses) == 10 else 0.0))

    sink = SnapcastSink("snap", settings_for(server), tmp_path / "restore", sleep=sleep_with_a_stall).open()
    wait_until(lambda: all(c.frames() > 48000 for c in clients))
    starts = [c.frames() for c in clients]
    track = burst_track("stalled")
    Playback(sink, AUDIO, ChimeSet.silent(), zone="snap").play(track)
    assert track.zones()["snap"].error is None and next(pauses) > 11
    needle = soxr.resample(BURST, 24000, 48000)
    for client, start in zip(clients, starts, strict=True):
        _, score = locate(client.mono()[start:], needle)
        assert score > 0.8, f"{client.host_id} heard the burst with a gap (correlation {score:.2f})"


def test_a_snapserver_restart_mid_stream_fails_that_zone_only(snapcast, tmp_path):
    server, clients = snapcast
    wait_until(lambda: all(c.frames() > 48000 for c in clients))  # both connected, in their groups
    snap = SnapcastSink("snap", settings_for(server), tmp_path / "restore").open()
    other = NullSink()
    track = burst_track("long", repeats=4)  # 6 s
    players = [
        threading.Thread(target=Playback(snap, AUDIO, ChimeSet.silent(), zone="snap").play, args=(track,)),
        threading.Thread(target=Playback(other, AUDIO, ChimeSet.silent(), zone="other").play, args=(track,)),
    ]
    for player in players:
        player.start()
    wait_until(lambda: track.zones()["snap"].t_first_audio is not None)
    time.sleep(0.5)
    server.restart()
    for player in players:
        player.join(30)
    zones = track.zones()
    assert zones["snap"].error and "snapcast" in zones["snap"].error
    assert zones["other"].error is None and zones["other"].t_ended is not None
    assert other.samples_written >= len(BURST) * 4  # the other zone played all of it
    assert snap.state == "lost"
    wait_until(lambda: snap.recover(), timeout=15)  # back after its backoff, groups switched back
    assert streams(snap) == {"music"}
    assert not RestoreRecord(tmp_path / "restore", "snap").pending()


def test_what_a_crash_left_switched_is_switched_back_at_start(snapcast, tmp_path):
    server, clients = snapcast
    wait_until(lambda: all(c.frames() > 48000 for c in clients))  # both connected, in their groups
    probe = SnapcastSink("probe", settings_for(server), tmp_path / "unused").open()
    groups = groups_for(probe.control.status(), ("*",))
    RestoreRecord(tmp_path / "restore", "snap").remember(groups)  # what a killed daemon leaves behind
    for group in groups:
        probe.control.set_stream(group, "announcements")
    assert streams(probe) == {"announcements"}
    SnapcastSink("snap", settings_for(server), tmp_path / "restore").open()
    assert streams(probe) == {"music"}
    assert not (tmp_path / "restore" / "snap.json").exists()


def test_a_snapserver_down_at_start_is_lost_not_a_crash_and_retried(tmp_path):
    server = Snapserver(tmp_path)  # configured, not started yet
    now = [0.0]
    sink = SnapcastSink("snap", settings_for(server), tmp_path / "restore", clock=lambda: now[0]).open()
    assert sink.state == "lost"
    with pytest.raises(AudioError, match="unreachable"):
        sink.begin("a1")
    assert not sink.recover()  # still down
    server.start()
    try:
        assert not sink.recover()  # up, but the backoff has not passed: no attempt
        now[0] += 60.0
        assert sink.recover() and sink.state == "ok"
    finally:
        server.stop()
