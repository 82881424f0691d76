"""Snapcast zone measurements: which snapserver source a zone should stream into (docs/operations.md).

For each source (`tcp://` in snapserver's server mode, `pipe://`): a real snapserver and two real
`snapclient --player file` on loopback, music playing on their groups; the zone's sink (the daemon's own
SnapcastSink under its own Playback) plays a 2 s noise burst `--runs` times. Reported, as medians:
  - latency: from the first sample of the burst written to the source to it being played by a client
    (found by cross-correlation in the client's file; the file's time axis from its growth in real time);
  - skew: the difference between the two clients' play-out times of the burst;
  - intact: the lowest correlation of the whole burst with what a client played (1.0: no gap, nothing lost);
  - restart: a snapserver restart in the middle of a burst, the time until the sink reports the error,
    and whether the groups are back on the music stream once snapserver is up again.

    .venv/bin/python scripts/measure_snapcast.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import soxr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from snapcast_rig import (
    Snapclient,
    Snapserver,
    Timeline,
    locate,
    music_level,
    running_rig,
    wait_until,
)

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import Track
from qwen3tts.appliance.zones.snapcast_rpc import groups_for
from qwen3tts.appliance.zones.snapcast_sink import SnapcastSink
from qwen3tts.settings import AudioSettings, SnapcastSettings

BURST = np.random.default_rng(7).uniform(-0.5, 0.5, 48000).astype(np.float32)  # 2 s at 24 kHz
# Latency and skew are about the burst's first sample, so its first quarter second is what is searched
# for: a starved writer or client can put a gap into the rest (a CI run found the whole burst at a
# correlation of 0.54), which is reported as "intact" instead of failing the measurement.
ONSET_FRAMES = 12000  # 0.25 s at 48 kHz


class Timed(SnapcastSink):
    """The sink, noting when the first non-silent block went to the source."""

    first_speech: float | None = None

    def write(self, block: np.ndarray) -> bool:
        if self.first_speech is None and np.any(block):
            self.first_speech = time.monotonic()
        return super().write(block)


def play(sink: SnapcastSink, track: Track) -> None:
    audio = AudioSettings(lead_in_ms=300, tail_ms=300, fade_ms=10, block_ms=40)
    Playback(sink, audio, ChimeSet.silent()).play(track)


def burst_track(label: str, seconds: float = 2.0) -> Track:
    track = Track(label)
    track.put(np.tile(BURST, int(np.ceil(seconds / 2)))[: int(seconds * 24000)])
    track.close()
    return track


def playing_music(client: Snapclient) -> bool:
    return client.frames() > ONSET_FRAMES and music_level(client.mono()[-ONSET_FRAMES:]) > 0.2


def one_run(server: Snapserver, clients: list[Snapclient], settings: SnapcastSettings, work: Path) -> dict:
    sink = Timed("zone", settings, work / "restore").open()
    timeline = Timeline(clients).start()
    starts = [c.frames() for c in clients]
    t_begin = time.monotonic()
    play(sink, burst_track("burst"))
    timeline.stop()
    whole = soxr.resample(BURST, 24000, 48000)
    onset = whole[:ONSET_FRAMES]
    heard, intact = [], []
    for client, start in zip(clients, starts, strict=True):
        played = client.mono()[start:]
        offset, score = locate(played, onset)
        assert score > 0.8, f"the burst's start not found in {client.host_id} (correlation {score:.2f})"
        heard.append(timeline.played_at(client, start + offset, (t_begin + 0.6, sink.first_speech + 2.0)))
        intact.append(locate(played, whole)[1])
    return {"latency": heard[0] - sink.first_speech, "skew": abs(heard[0] - heard[1]), "intact": min(intact)}


def restart_run(server: Snapserver, settings: SnapcastSettings, work: Path) -> dict:
    sink = Timed("zone", settings, work / "restore").open()
    track = burst_track("long", seconds=6.0)
    player = threading.Thread(target=play, args=(sink, track))
    player.start()
    time.sleep(2.0)
    t_kill = time.monotonic()
    server.restart()
    player.join(30)
    failed = track.zones()["default"].error
    t_error = time.monotonic()
    time.sleep(1.5)
    sink.recover()
    back = all(stream == "music" for stream in groups_for(sink.control.status(), ("*",)).values())
    return {"error_after_s": t_error - t_kill, "error": failed, "groups_back": back}


def measure(source: str, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, running_rig(Path(tmp)) as (server, clients):
        work = Path(tmp)
        wait_until(lambda: all(playing_music(c) for c in clients), 30.0)
        stream = "announcements" if source == "tcp" else "announcements_pipe"
        uri = server.tcp_source if source == "tcp" else server.pipe_source
        settings = SnapcastSettings(control_port=server.control_port, source=uri, stream=stream)
        results = [one_run(server, clients, settings, work) for _ in range(runs)]
        restart = restart_run(server, replace(settings), work)
    latency = statistics.median(r["latency"] for r in results)
    skew = statistics.median(r["skew"] for r in results)
    worst = max(r["skew"] for r in results)
    intact = min(r["intact"] for r in results)
    print(f"{source}: latency median {latency * 1000:.0f} ms, client skew median {skew * 1000:.1f} ms "
          f"(worst {worst * 1000:.1f} ms) over {runs} runs; the whole burst found at a correlation of at "
          f"least {intact:.2f}; restart: error after "
          f"{restart['error_after_s']:.2f} s ({restart['error']}), groups back on music: "
          f"{restart['groups_back']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--source", choices=("tcp", "pipe"), action="append")
    args = parser.parse_args()
    for source in args.source or ("tcp", "pipe"):
        measure(source, args.runs)


if __name__ == "__main__":
    main()
