"""Child process of test_loudness_alsa.py: levelled plays through the real ALSA sink, one after another.

argv: <device name> <signals.npz> <target LUFS>. Prints a JSON report: the sink's rate and channels, and
how many 24 kHz samples each play wrote (the parent finds each play in the capture by these counts).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from qwen3tts.appliance.audio.alsa import AlsaSink
from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.loudness import LoudnessTarget
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import HowToPlay, Track
from qwen3tts.settings import AudioSettings

FIRST, LATER = 3840, 23040  # the engine's chunk sizes


def main() -> int:
    device, signals, target = sys.argv[1], np.load(Path(sys.argv[2])), float(sys.argv[3])
    settings = AudioSettings(sink="alsa", device=device, lead_in_ms=0, tail_ms=0, block_ms=40)
    sink = AlsaSink(device, block_ms=settings.block_ms).open()
    write, written = sink.write, [0]

    def counting(block: np.ndarray) -> bool:
        written[0] += len(block)
        return write(block)

    sink.write = counting
    playback = Playback(sink, settings, ChimeSet.silent(), loudness=LoudnessTarget(target, -1.0))
    counts = {}
    for name in signals.files:
        speech, track = signals[name], Track(name)
        track.how = HowToPlay(chime="none")
        for at in [0, *range(FIRST, len(speech), LATER)]:
            track.put(speech[at : at + (FIRST if at == 0 else LATER)])
        track.close()
        before = written[0]
        playback.play(track)
        counts[name] = written[0] - before
    print(json.dumps({"rate": sink.rate, "channels": sink.channels, "written": counts}))
    sink.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
