"""The chimes: the committed defaults are what the generator writes, they differ by priority, and the
settings resolve 'default', 'none' and paths per priority (naming the key of a file that cannot be read)."""

from __future__ import annotations

import numpy as np
import pytest

from qwen3tts.appliance.audio.chimes import (
    DEFAULT_SOUNDS_DIR,
    PRIORITIES,
    ChimeSet,
    read_sound,
    synthesize_chime,
    write_default_chimes,
)
from qwen3tts.appliance.priority import Priority
from qwen3tts.errors import ConfigError
from qwen3tts.settings import AudioSettings


def test_the_committed_default_chimes_are_what_the_generator_writes(tmp_path):
    for path in write_default_chimes(tmp_path):
        committed = DEFAULT_SOUNDS_DIR / path.name
        assert committed.exists(), f"{committed} missing: run python -m qwen3tts.appliance.audio.chimes"
        # numpy's vectorised sin may differ in the last bit between CPUs: allow 2 LSB of 16-bit PCM
        assert np.abs(read_sound(committed) - read_sound(path)).max() <= 2 / 32768


def test_default_chimes_differ_by_priority_start_and_end_silent_and_do_not_clip():
    chimes = {p: synthesize_chime(p) for p in PRIORITIES}
    for priority, x in chimes.items():
        assert x.dtype == np.float32 and 0.3 < np.abs(x).max() <= 0.7, priority
        assert abs(x[0]) < 1e-3 and abs(x[-1]) < 1e-3, priority
        np.testing.assert_array_equal(x, synthesize_chime(priority))  # deterministic
    assert len({len(x) for x in chimes.values()}) == 3


def test_chime_settings_resolve_default_none_and_paths_and_name_the_key_on_a_bad_file(tmp_path):
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"not a wav")
    chimes = ChimeSet.from_settings(
        AudioSettings(chime_normal="none", chime_emergency=str(DEFAULT_SOUNDS_DIR / "normal.wav"))
    )
    assert chimes.for_announcement(Priority.NORMAL) is None
    assert len(chimes.for_announcement(Priority.PRIORITY)) == len(synthesize_chime("priority"))
    assert len(chimes.for_announcement(Priority.EMERGENCY)) == len(synthesize_chime("normal"))
    assert chimes.for_announcement(Priority.NORMAL, "emergency") is chimes.by_priority["emergency"]
    assert chimes.for_announcement(Priority.EMERGENCY, "none") is None
    with pytest.raises(ConfigError, match=r"audio\.chime_priority"):
        ChimeSet.from_settings(AudioSettings(chime_priority=str(bad)))


def test_an_announcement_s_chime_names_default_none_or_a_priority_and_an_unknown_name_plays_its_own(caplog):
    chimes = ChimeSet.defaults()
    own = chimes.by_priority["priority"]
    assert chimes.for_announcement(Priority.PRIORITY, "default") is own
    assert chimes.for_announcement(Priority.PRIORITY, "normal") is chimes.by_priority["normal"]
    assert chimes.for_announcement(Priority.PRIORITY, "klaxon") is own
    assert "unknown chime 'klaxon'; playing the priority chime" in caplog.text
    assert chimes.names() == ("none", "default", "normal", "priority", "emergency")
    assert ChimeSet.silent().for_announcement(Priority.EMERGENCY) is None


@pytest.mark.parametrize(("suffix", "fmt", "subtype", "tolerance"), [
    ("flac", "FLAC", "PCM_16", 2 / 32768),
    ("ogg", "OGG", "VORBIS", 0.05),
    ("wav", "WAV", "FLOAT", 1e-7),
])  # fmt: skip
def test_a_chime_may_be_any_sound_file_libsndfile_reads_at_any_rate_and_channel_count(
    tmp_path, suffix, fmt, subtype, tolerance
):
    import soundfile

    t = np.arange(int(0.5 * 48000)) / 48000
    tone = (0.4 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    path = tmp_path / f"gong.{suffix}"
    soundfile.write(str(path), np.stack([tone, tone], axis=1), 48000, format=fmt, subtype=subtype)
    settings = AudioSettings(chime_normal=str(path), chime_priority="none", chime_emergency="none")
    chime = ChimeSet.from_settings(settings).for_announcement(Priority.NORMAL)
    expected = tone[::2]  # 48 kHz -> 24 kHz, the stereo channels averaged
    assert chime.dtype == np.float32 and abs(len(chime) - len(expected)) <= 1
    middle = slice(1000, len(expected) - 1000)  # the resampler's edges aside
    assert np.abs(chime[middle] - expected[middle]).max() < tolerance + 0.01


def test_a_long_recording_is_not_taken_for_a_chime(tmp_path):
    import soundfile

    path = tmp_path / "song.flac"
    soundfile.write(str(path), np.zeros(31 * 24000, np.float32), 24000, format="FLAC")
    with pytest.raises(ConfigError, match=r"audio.chime_normal: cannot read chime .*up to 30 s"):
        ChimeSet.from_settings(AudioSettings(chime_normal=str(path)))
