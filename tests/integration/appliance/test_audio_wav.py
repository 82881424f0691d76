"""The wav sink through the whole playback pipeline: one complete file per announcement."""

from __future__ import annotations

import wave

import numpy as np
import pytest

from qwen3tts.appliance.audio.alsa import open_sink
from qwen3tts.appliance.audio.chimes import ChimeSet, read_sound, synthesize_chime
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.sinks import WavSink
from qwen3tts.appliance.audio.track import HowToPlay, Track
from qwen3tts.settings import AudioSettings


def speech(label: str, seconds: float, value: float = 0.3, close: bool = True, **how) -> Track:
    """A track that already holds all of its speech (closed), or whose synthesis stalls there."""
    track = Track(label)
    track.how = HowToPlay(**how)
    track.put(np.full(int(seconds * 24000), value, dtype=np.float32))
    if close:
        track.close()
    return track


def played_out(playback: Playback, track: Track) -> bool:
    playback.play(track)
    return track.played_out and track.error is None


def cut_after(sink: WavSink, track: Track, samples: int, keep_partial: bool = True) -> None:
    """Cut `track` from inside the sink's write once `samples` have been written (the audio thread's own
    thread: the next block sees the cut, exactly as when the announcer cuts between two blocks)."""
    write, written = sink.write, [0]

    def write_then_cut(block):
        underflow = write(block)
        written[0] += len(block)
        if written[0] >= samples and not track.is_cut:
            track.cut(keep_partial=keep_partial)
        return underflow

    sink.write = write_then_cut


def test_each_announcement_becomes_one_wav_file_of_chime_lead_in_speech_and_tail(tmp_path):
    settings = AudioSettings(sink="wav", wav_dir=tmp_path / "out", lead_in_ms=300, tail_ms=200)
    sink = open_sink(settings)
    assert isinstance(sink, WavSink)
    playback = Playback(sink, settings, ChimeSet.defaults())
    assert played_out(playback, speech("door/bell 1", 1.0))
    assert played_out(playback, speech("door/bell 1", 0.5, chime="none"))

    files = sorted((tmp_path / "out").iterdir())
    assert [f.name for f in files] == ["000001-door_bell_1.wav", "000002-door_bell_1.wav"]
    chime = len(synthesize_chime("normal"))
    for path, expected in zip(files, (chime + 7200 + 24000 + 4800, 7200 + 12000 + 4800), strict=True):
        with wave.open(str(path)) as wav:
            assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
            assert wav.getnframes() == expected
    second = read_sound(files[1])
    assert not second[:7200].any() and not second[-4800:].any()
    np.testing.assert_allclose(second[7200 + 500], 0.3, atol=1 / 32767)


@pytest.mark.parametrize("rate", [16000, 48000])
def test_a_wav_sink_at_another_rate_resamples_to_the_exact_length(tmp_path, rate):
    sink = WavSink(tmp_path, rate=rate)
    settings = AudioSettings(lead_in_ms=100, tail_ms=100)
    assert played_out(Playback(sink, settings, ChimeSet.silent()), speech("r", 0.5))
    (path,) = tmp_path.glob("*.wav")
    with wave.open(str(path)) as wav:
        assert wav.getframerate() == rate and wav.getnframes() == int(0.7 * rate)


def test_a_cut_announcement_file_holds_what_a_speaker_would_have_played_and_no_part_file_lingers(tmp_path):
    track = speech("x", 0.2, close=False)  # synthesis stalls after 4800 samples
    sink = WavSink(tmp_path)
    cut_after(sink, track, 2400 + 3840)  # the lead-in and four 40 ms blocks; 10 ms held back for the fade
    settings = AudioSettings(lead_in_ms=100, tail_ms=100)
    Playback(sink, settings, ChimeSet.silent()).play(track)
    assert track.ended and not track.played_out
    (path,) = tmp_path.iterdir()
    played = read_sound(path)
    assert path.name == "000001-x.wav" and len(played) == 2400 + 3840 + 240  # lead-in, speech, fade; no tail
    assert played[-1] == 0.0 and played[2400 + 2400] == pytest.approx(0.3, abs=1 / 32767)


def test_an_announcement_cut_at_shutdown_leaves_no_wav_file_and_the_next_one_is_whole(tmp_path):
    track = speech("cut", 0.2, close=False)
    sink = WavSink(tmp_path)
    cut_after(sink, track, 2400 + 3840, keep_partial=False)  # what the announcer does for Cut.SHUTDOWN
    playback = Playback(sink, AudioSettings(lead_in_ms=100, tail_ms=100), ChimeSet.silent())
    playback.play(track)
    assert track.ended and not track.played_out
    assert list(tmp_path.iterdir()) == []  # neither a .wav nor a .part
    assert played_out(playback, speech("next", 0.2))
    assert [p.name for p in tmp_path.iterdir()] == ["000002-next.wav"]


def test_part_files_a_crash_left_are_removed_when_the_sink_opens_and_finished_files_stay(tmp_path):
    (tmp_path / "000007-crashed.wav.part").write_bytes(b"RIFF half")
    (tmp_path / "000006-done.wav").write_bytes(b"RIFF whole")
    WavSink(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["000006-done.wav"]
