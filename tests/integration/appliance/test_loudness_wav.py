"""Even loudness and clean cuts through the real file output: `Playback` -> `WavSink` -> 16-bit WAV files,
read back with soundfile and measured with pyloudnorm (issue 24 items 1 and 4).

Speech comes in the engine's chunk sizes at very different levels; each file must come out within 1 LU
of the zone's target, full-scale input under the true-peak ceiling, and a play cut mid-waveform must end
in a fade, not a click (the measure of scripts/measure_cut_click.py).
"""

from __future__ import annotations

import numpy as np
import soundfile
from loudness_plays import compare, lufs, streamed
from script_modules import script

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.limiter import true_peak
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.sinks import WavSink
from qwen3tts.appliance.priority import Priority
from qwen3tts.appliance.zones.outputs import zone_loudness
from qwen3tts.settings import AudioSettings, Settings
from qwen3tts.settings_loader import build

RATE = 24000
measure = script("measure_cut_click")


def test_files_of_a_zone_come_out_at_its_target_and_under_its_ceiling(tmp_path):
    hall = {"name": "hall", "output": "wav", "wav_dir": str(tmp_path), "loudness": {"target_lufs": -23}}
    settings = build(Settings, {"zones": [hall]}, "")
    target = zone_loudness(settings, "hall")
    audio = AudioSettings(lead_in_ms=0, tail_ms=0)
    playback = Playback(WavSink(tmp_path), audio, ChimeSet.silent(), loudness=target, zone="hall")
    rng = np.random.default_rng(11)
    square = np.sign(np.sin(2 * np.pi * 440 * np.arange(2 * RATE) / RATE)).astype(np.float32)
    plays = {
        "whisper": [compare.speechlike(3, -38, rng) for _ in range(2)],
        "normal": [compare.speechlike(3, -20, rng) for _ in range(2)],
        "shout": [np.clip(compare.speechlike(3, -3, rng) * 4, -1, 1) for _ in range(2)],
        "square": [square, square],
    }
    for label, pieces in plays.items():
        playback.play(streamed(pieces, label))
    files = sorted(tmp_path.glob("*.wav"))
    assert [f.stem.split("-", 1)[1] for f in files] == list(plays)
    for path in files:
        samples, rate = soundfile.read(path, dtype="float32")
        assert rate == RATE
        assert abs(lufs(samples) - target.lufs) <= 1.0, f"{path.name}: {lufs(samples):.2f} LUFS"
        assert 20 * np.log10(true_peak(samples)) <= target.true_peak_dbtp + 0.1, path.name


def test_a_cut_file_ends_in_a_fade_and_the_emergency_file_starts_with_its_levelled_chime(tmp_path):
    settings = AudioSettings()
    target = zone_loudness(Settings(), "default")
    sink = WavSink(tmp_path)
    playback = Playback(sink, settings, ChimeSet.defaults(), loudness=target)
    cut = streamed([measure.vowel()], "cut", chime="none")
    write, written = sink.write, [0]

    def write_then_cut(block):  # the barge-in lands between two blocks, on the audio thread's own turn
        underflow = write(block)
        written[0] += len(block)
        if written[0] >= measure.CUT_AFTER and not cut.is_cut:
            cut.cut()  # keep_partial: the cut play's file stays, to be measured
        return underflow

    sink.write = write_then_cut
    playback.play(cut)
    sink.write = write
    playback.play(streamed([np.zeros(RATE // 5, np.float32)], "alarm", priority=Priority.EMERGENCY))
    cut_file, alarm_file = sorted(tmp_path.glob("*.wav"))
    heard, _ = soundfile.read(cut_file, dtype="float32")
    alarm, _ = soundfile.read(alarm_file, dtype="float32")
    stream = np.concatenate([heard, alarm])
    reference = heard[-RATE // 5 : -RATE // 10]
    assert measure.click_db(stream, len(heard), reference) < -50.0
    chime = alarm[: len(ChimeSet.defaults().by_priority["emergency"])]
    assert abs(lufs(chime) - target.lufs) <= 0.5
