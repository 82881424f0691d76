"""Snapcast zone measurements: which snapserver source a zone should stream into (docs/operations.md).

For each source (`tcp://` in snapserver's server mode, `pipe://`): a real snapserver and two real
`snapclient --player file` on loopback, music playing on their groups; the zone's sink (the daemon's own
SnapcastSink under its own Playback) plays a 2 s noise burst `--runs` times. Reported, as medians:
  - latency: from the first sample of the burst written to the source to it being played by a client
    (found by cross-correlation in the client's file; the file's time axis from its growth in real time);
  - skew: the difference between the two clients' play-out times of the burst;
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
from snapcast_rig import Music, Snapclient, Snapserver, Timeline, locate

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import Track
from qwen3tts.appliance.zones.snapcast_rpc import groups_for
from qwen3tts.appliance.zones.snapcast_sink import SnapcastSink
from qwen3tts.settings import AudioSettings, SnapcastSettings

BURST = np.random.default_rng(7).uniform(-0.5, 0.5, 48000).astype(np.float32)  # 2 s at 24 kHz


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


def one_run(server: Snapserver, clients: list[Snapclient], settings: SnapcastSettings, work: Path) -> dict:
    sink = Timed("zone", settings, work / "restore").open()
    timeline = Timeline(clients).start()
    starts = [c.frames() for c in clients]
    t_begin = time.monotonic()
    play(sink, burst_track("burst"))
    timeline.stop()
    needle = soxr.resample(BURST, 24000, 48000)
    heard = []
    for client, start in zip(clients, starts, strict=True):
        offset, score = locate(client.mono()[start:], needle)
        assert score > 0.8, f"burst not found in {client.host_id} (correlation {score:.2f})"
        heard.append(timeline.played_at(client, start + offset, (t_begin + 0.6, sink.first_speech + 2.0)))
    return {"latency": heard[0] - sink.first_speech, "skew": abs(heard[0] - heard[1])}


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
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server = Snapserver(work)
        server.start()
        clients = [Snapclient(server, name) for name in ("left", "right")]
        for client in clients:
            client.start()
        music = Music(server).start()
        time.sleep(2.0)
        stream = "announcements" if source == "tcp" else "announcements_pipe"
        uri = server.tcp_source if source == "tcp" else server.pipe_source
        settings = SnapcastSettings(control_port=server.control_port, source=uri, stream=stream)
        try:
            results = [one_run(server, clients, settings, work) for _ in range(runs)]
            restart = restart_run(server, replace(settings), work)
        finally:
            music.stop()
            for client in clients:
                client.stop()
            server.stop()
    latency = statistics.median(r["latency"] for r in results)
    skew = statistics.median(r["skew"] for r in results)
    worst = max(r["skew"] for r in results)
    print(f"{source}: latency median {latency * 1000:.0f} ms, client skew median {skew * 1000:.1f} ms "
          f"(worst {worst * 1000:.1f} ms) over {runs} runs; restart: error after "
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
