"""Child process of test_audio_alsa.py: plays known signals through the real ALSA sink, prints a JSON report.

Runs in its own process because PortAudio reads the ALSA configuration (ALSA_CONFIG_PATH, set by
the parent) once, when sounddevice is imported. argv: <device name> <signals.npz> <wav dir>.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from qwen3tts.appliance.audio.alsa import AlsaSink, open_sink
from qwen3tts.appliance.audio.alsa_devices import list_output_devices
from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import Track
from qwen3tts.errors import AudioError
from qwen3tts.settings import AudioSettings


def main() -> int:
    device, signals_path, wav_dir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    signals = np.load(signals_path)
    settings = AudioSettings(
        sink="alsa", device=device, lead_in_ms=100, tail_ms=100, fade_ms=0, block_ms=40, jitter_buffer_ms=0
    )
    states: list[list[str]] = []
    sink = AlsaSink(device, block_ms=settings.block_ms, on_state=lambda s, d: states.append([s, d])).open()
    events = []
    playback = Playback(sink, settings, ChimeSet.silent())
    for name in ("first", "second"):
        speech = signals[name]
        track = Track(name)
        for i in range(0, len(speech), 1000):
            track.put(speech[i : i + 1000])
        track.close()
        playback.play(track)
        events += [["started", name, track.error]] if track.t_started is not None else []
        events += [["first_audio", name, track.error]] if track.t_first_audio is not None else []
        events += [["finished" if track.played_out else "cut", name, track.error]]
    report = {
        "rate": sink.rate,
        "channels": sink.channels,
        "name": sink.name,
        "latency": sink.latency(),
        "events": events,
        "states": states,
        "underflows": playback.underflows,
        "devices": [d["name"] for d in list_output_devices()],
    }
    sink.close()
    try:
        AlsaSink("no-such-speaker").open()
        report["missing_device"] = "opened?!"
    except AudioError as exc:
        report["missing_device"] = f"AudioError: {exc}"
    fallback = open_sink(AudioSettings(sink="auto", device="no-such-speaker", wav_dir=wav_dir))
    report["auto_fallback"] = type(fallback).__name__
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
