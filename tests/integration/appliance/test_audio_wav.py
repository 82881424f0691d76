"""The wav sink through the whole playback pipeline: one complete file per announcement."""

from __future__ import annotations

import wave

import numpy as np
import pytest

from qwen3tts.appliance.alsa import open_sink
from qwen3tts.appliance.chimes import ChimeSet, read_wav, synthesize_chime
from qwen3tts.appliance.playback import Playback, Utterance
from qwen3tts.appliance.sinks import WavSink
from qwen3tts.settings import AudioSettings


def speech(seconds: float, value: float = 0.3):
    n = int(seconds * 24000)
    return (np.full(min(960, n - i), value, dtype=np.float32) for i in range(0, n, 960))


def test_each_announcement_becomes_one_wav_file_of_chime_lead_in_speech_and_tail(tmp_path):
    settings = AudioSettings(sink="wav", wav_dir=tmp_path / "out", lead_in_ms=300, tail_ms=200)
    sink = open_sink(settings)
    assert isinstance(sink, WavSink)
    playback = Playback(sink, settings, ChimeSet.defaults())
    assert playback.play(Utterance("door/bell 1", speech(1.0))).kind == "finished"
    assert playback.play(Utterance("door/bell 1", speech(0.5), chime="none")).kind == "finished"

    files = sorted((tmp_path / "out").iterdir())
    assert [f.name for f in files] == ["000001-door_bell_1.wav", "000002-door_bell_1.wav"]
    chime = len(synthesize_chime("normal"))
    for path, expected in zip(files, (chime + 7200 + 24000 + 4800, 7200 + 12000 + 4800), strict=True):
        with wave.open(str(path)) as wav:
            assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
            assert wav.getnframes() == expected
    second = read_wav(files[1])
    assert not second[:7200].any() and not second[-4800:].any()
    np.testing.assert_allclose(second[7200 + 500], 0.3, atol=1 / 32767)


@pytest.mark.parametrize("rate", [16000, 48000])
def test_a_wav_sink_at_another_rate_resamples_to_the_exact_length(tmp_path, rate):
    sink = WavSink(tmp_path, rate=rate)
    settings = AudioSettings(lead_in_ms=100, tail_ms=100)
    Playback(sink, settings, ChimeSet.silent()).play(Utterance("r", speech(0.5)))
    (path,) = tmp_path.glob("*.wav")
    with wave.open(str(path)) as wav:
        assert wav.getframerate() == rate and wav.getnframes() == int(0.7 * rate)


def test_a_failed_announcement_file_holds_what_a_speaker_would_have_played_and_no_part_file_lingers(tmp_path):
    def broken():
        yield np.full(4800, 0.3, dtype=np.float32)
        raise RuntimeError("synthesis died")

    sink = WavSink(tmp_path)
    settings = AudioSettings(lead_in_ms=100, tail_ms=100)
    final = Playback(sink, settings, ChimeSet.silent()).play(Utterance("x", broken()))
    assert final.kind == "error" and final.reason == "RuntimeError: synthesis died"
    (path,) = tmp_path.iterdir()
    played = read_wav(path)
    assert path.name == "000001-x.wav" and len(played) == 2400 + 4800  # lead-in + speech, no tail
    assert played[-1] == 0.0 and played[2400 + 2400] == pytest.approx(0.3, abs=1 / 32767)


def test_an_announcement_cut_at_shutdown_leaves_no_wav_file_and_the_next_one_is_whole(tmp_path):
    sink = WavSink(tmp_path)
    settings = AudioSettings(lead_in_ms=100, tail_ms=100)
    playback = Playback(sink, settings, ChimeSet.silent())

    def cut_after_a_while():
        for i, block in enumerate(speech(2.0)):
            if i == 5:  # what Service.stop does with on_shutdown: cancel
                assert playback.interrupt("cut", reason="shutdown")
            yield block

    final = playback.play(Utterance("cut", cut_after_a_while()))
    assert (final.kind, final.reason) == ("cancelled", "shutdown")
    assert list(tmp_path.iterdir()) == []  # neither a .wav nor a .part
    assert playback.play(Utterance("next", speech(0.2))).kind == "finished"
    assert [p.name for p in tmp_path.iterdir()] == ["000002-next.wav"]


def test_part_files_a_crash_left_are_removed_when_the_sink_opens_and_finished_files_stay(tmp_path):
    (tmp_path / "000007-crashed.wav.part").write_bytes(b"RIFF half")
    (tmp_path / "000006-done.wav").write_bytes(b"RIFF whole")
    WavSink(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["000006-done.wav"]
