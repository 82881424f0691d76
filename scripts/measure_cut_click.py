"""How loud is the click of a barge-in, and how long the silence before the emergency chime?

    .venv/bin/python scripts/measure_cut_click.py

Plays a steady vowel-like tone (harmonics of 160 Hz up to 3.2 kHz: nothing of its own above 4 kHz) through
the real `Playback` into a recording sink, cuts it mid-waveform after 0.5 s of output (from the sink's
write, as a barge-in lands between two blocks), then plays an emergency announcement with its chime, as
the announcer does once the cut play has ended. The click is the energy above 4 kHz (8th-order
Butterworth high-pass) in the 20 ms around the end of the cut play, in dB relative to the energy of the
tone in 20 ms (so 0 dB is a click as loud as the speech). The gap is the silence written between the last
sound of the cut play and the first sound of the chime. Rows: an abrupt cut (fade_ms 0, no levelling:
what cutting mid-waveform sounds like) and the daemon's defaults (fade_ms 10, loudness levelling on).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.signal import butter, sosfiltfilt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))  # the recording sink

from audio_fakes import FakeSink

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.loudness import LoudnessTarget
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import HowToPlay, Track
from qwen3tts.appliance.priority import Priority
from qwen3tts.settings import AudioSettings

RATE = 24000
CUT_AFTER = RATE // 2  # samples of the play (300 ms lead-in, then speech) written before the barge-in
SILENT = 1e-4  # below this a sample is silence (-80 dBFS)


def vowel(seconds: float = 2.0, f0: float = 160.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    tone = sum(np.sin(2 * np.pi * k * f0 * t + k) / k for k in range(1, 21))  # up to 3.2 kHz
    return (0.25 * tone / np.abs(tone).max()).astype(np.float32)


class CutPlay(NamedTuple):
    stream: np.ndarray
    """Everything written to the sink, both plays."""
    cut_at: int
    """Samples of the cut play written when the barge-in landed."""
    cut_end: int
    """Where the cut play's samples end (and the emergency play's begin)."""


def cut_then_emergency(settings: AudioSettings, loudness: LoudnessTarget | None) -> CutPlay:
    cut = Track("cut")
    cut.how = HowToPlay(Priority.NORMAL, "none")
    speech = vowel()
    for start in range(0, len(speech), 3840):
        cut.put(speech[start : start + 3840])
    cut.close()

    cut_at = [0]

    def barge_in(sink: FakeSink, write) -> None:
        if write.item_id == "cut" and len(sink.played("cut")) >= CUT_AFTER and not cut.is_cut:
            cut_at[0] = len(sink.played("cut"))
            cut.cut()

    sink = FakeSink(on_write=barge_in)
    chimes = ChimeSet.defaults()
    playback = Playback(sink, settings, chimes, clock=sink.clock, sleep=sink.clock.sleep, loudness=loudness)
    playback.play(cut)
    emergency = Track("emergency")
    emergency.how = HowToPlay(Priority.EMERGENCY)
    emergency.put(np.zeros(RATE // 10, np.float32))
    emergency.close()
    playback.play(emergency)
    return CutPlay(sink.played(), cut_at[0], len(sink.played("cut")))


def speech_of(play: CutPlay) -> np.ndarray:
    """The 100 ms of steady speech before the barge-in landed."""
    return play.stream[play.cut_at - RATE // 10 : play.cut_at]


def click_db(stream: np.ndarray, at: int, reference: np.ndarray, rate: int = RATE) -> float:
    """Energy above 4 kHz in the 20 ms around `at`, in dB relative to `reference`'s energy per 20 ms."""
    window = rate // 50
    high = sosfiltfilt(butter(8, 4000, "highpass", fs=rate, output="sos"), stream.astype(np.float64))
    click = np.sum(high[max(0, at - window // 2) : at + window // 2] ** 2)
    per_window = np.sum(reference.astype(np.float64) ** 2) * window / len(reference)
    return float(10 * np.log10(max(click, 1e-30) / per_window))


def gap_ms(stream: np.ndarray, cut_end: int) -> float:
    """Silence between the last sound of the cut play and the first sound of the next one, in ms."""
    before = np.flatnonzero(np.abs(stream[:cut_end]) > SILENT)
    after = np.flatnonzero(np.abs(stream[cut_end:]) > SILENT)
    last = before[-1] + 1 if len(before) else 0
    first = cut_end + (after[0] if len(after) else len(stream) - cut_end)
    return 1000 * (first - last) / RATE


CASES = {
    "abrupt cut (fade_ms 0, no levelling)": (AudioSettings(fade_ms=0), None),
    "daemon defaults (fade_ms 10, levelled)": (AudioSettings(), LoudnessTarget()),
}


def main() -> int:
    print(
        "| cut | click above 4 kHz, dB re speech per 20 ms | barge-in to silence ms | gap to the chime ms |"
    )
    print("|---|---|---|---|")
    for name, (settings, loudness) in CASES.items():
        play = cut_then_emergency(settings, loudness)
        click = click_db(play.stream, play.cut_end, speech_of(play))
        fade_ms = 1000 * (play.cut_end - play.cut_at) / RATE
        print(f"| {name} | {click:.1f} | {fade_ms:.1f} | {gap_ms(play.stream, play.cut_end):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
