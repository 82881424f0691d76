"""Even loudness (issue 24 item 1): what a zone plays is measured with pyloudnorm and must sit within 1 LU
of the zone's target, whatever level the speech came in at, and never above the true-peak ceiling.

Speech-like signals come from scripts/compare_loudness.py (the same plays the strategies were chosen on),
streamed into the track in the engine's chunks (160 ms, then 960 ms) and played through `Playback` into a
recording sink; the speech part of the output is measured, not the gains the code computed.
"""

from __future__ import annotations

import numpy as np
import pytest
from audio_fakes import FakeSink
from loudness_plays import compare, lufs, streamed

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.limiter import true_peak
from qwen3tts.appliance.audio.loudness import LoudnessTarget, StreamLoudness
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import Track
from qwen3tts.appliance.priority import Priority
from qwen3tts.appliance.zones.outputs import zone_loudness
from qwen3tts.errors import ConfigError
from qwen3tts.settings import AudioSettings, LoudnessSettings, Settings
from qwen3tts.settings_loader import build

RATE = 24000

SETTINGS = AudioSettings(lead_in_ms=0, tail_ms=0, fade_ms=10, block_ms=40, jitter_buffer_ms=0)
TARGET = LoudnessTarget(-18.0, -1.0)


def played(
    pieces: list[np.ndarray], target: LoudnessTarget | None = TARGET, chimes=None, **how
) -> np.ndarray:
    sink = FakeSink()
    playback = Playback(sink, SETTINGS, chimes or ChimeSet.silent(), clock=sink.clock, sleep=sink.clock.sleep,
                        loudness=target)  # fmt: skip
    playback.play(streamed(pieces, **how))
    return sink.played("t")


@pytest.mark.parametrize("rms_db", [-36, -24, -12, -3])
def test_speech_at_any_input_level_plays_within_one_lu_of_the_target(rms_db):
    rng = np.random.default_rng(rms_db + 100)
    pieces = [compare.speechlike(3, rms_db, rng) for _ in range(3)]
    assert abs(lufs(np.concatenate(pieces)) - TARGET.lufs) > 1.0 or rms_db == -18  # the input is off target
    out = played(pieces)
    assert abs(lufs(out) - TARGET.lufs) <= 1.0, f"input {rms_db} dB RMS played at {lufs(out):.2f} LUFS"


def test_a_level_change_inside_one_announcement_still_ends_within_one_lu():
    rng = np.random.default_rng(5)
    pieces = [compare.speechlike(3, db, rng) for db in (-32, -20, -20)]
    out = played(pieces)
    assert abs(lufs(out) - TARGET.lufs) <= 1.0, f"{lufs(out):.2f} LUFS"


def test_each_zone_plays_at_its_own_target():
    rng = np.random.default_rng(9)
    pieces = [compare.speechlike(3, -30, rng) for _ in range(2)]
    quiet = played(pieces, LoudnessTarget(-26.0, -1.0))
    loud = played(pieces, LoudnessTarget(-14.0, -1.0))
    assert abs(lufs(quiet) + 26.0) <= 1.0 and abs(lufs(loud) + 14.0) <= 1.0


def test_levelling_off_plays_the_samples_as_they_came():
    rng = np.random.default_rng(3)
    pieces = [compare.speechlike(1, -30, rng)]
    out = played(pieces, target=None)
    assert abs(lufs(out) - lufs(pieces[0])) < 0.3  # only the 10 ms fades differ


@pytest.mark.parametrize("name", ["square", "clipped speech"])
def test_full_scale_input_never_crosses_the_true_peak_ceiling(name):
    if name == "square":
        piece = np.sign(np.sin(2 * np.pi * 440 * np.arange(2 * RATE) / RATE)).astype(np.float32)
    else:
        piece = np.clip(compare.speechlike(2, -3, np.random.default_rng(1)) * 4, -1, 1)
    assert 20 * np.log10(true_peak(piece)) >= -0.01  # 0 dBFS in
    out = played([piece, piece])
    assert 20 * np.log10(true_peak(out)) <= TARGET.true_peak_dbtp + 0.05
    assert np.abs(out).max() <= TARGET.ceiling  # and no sample clips either


def test_quiet_clicks_on_near_silence_are_limited_not_amplified_into_overload():
    rng = np.random.default_rng(2)
    piece = compare.speechlike(3, -40, rng)
    piece[rng.integers(0, len(piece), 5)] = 1.0
    out = played([piece])
    assert 20 * np.log10(true_peak(out)) <= TARGET.true_peak_dbtp + 0.05


def test_every_chime_is_levelled_to_the_target_and_played_so():
    chimes, target = ChimeSet.defaults(), LoudnessTarget(-28.0, -1.0)
    levelled = chimes.levelled(target)
    for priority, sound in levelled.by_priority.items():
        assert abs(lufs(chimes.by_priority[priority]) - target.lufs) > 1.0  # the shipped chime is off target
        assert abs(lufs(sound) - target.lufs) <= 0.5, priority
        assert 20 * np.log10(true_peak(sound)) <= target.true_peak_dbtp + 0.05, priority
    out = played([np.zeros(RATE // 10, np.float32)], target, chimes=chimes, priority=Priority.EMERGENCY)
    chime = out[: len(levelled.by_priority["emergency"])]
    assert abs(lufs(chime) - target.lufs) <= 0.5


def test_the_master_volume_lowers_the_levelled_speech_by_its_own_gain():
    rng = np.random.default_rng(4)
    pieces = [compare.speechlike(3, -30, rng) for _ in range(2)]
    full, half = played(pieces), played(pieces, gain=0.5)
    assert abs((lufs(full) - lufs(half)) - 20 * np.log10(2)) < 0.2


def test_the_estimate_ramps_between_chunks_instead_of_stepping():
    stream = StreamLoudness()
    rng = np.random.default_rng(6)
    stream.feed(compare.speechlike(1, -30, rng))
    levels = stream.feed(compare.speechlike(1, -10, rng))
    steps = np.abs(np.diff(levels))
    assert levels[-1] - levels[0] > 10 and steps.max() < 0.1  # 20 dB over 10 ms: under 0.1 dB a sample


def test_a_zone_without_its_own_loudness_takes_the_audio_sections():
    hall = {"name": "hall", "output": "null", "loudness": {"target_lufs": -14}}
    shop = {"name": "shop", "output": "null"}
    settings = build(Settings, {"audio": {"loudness": {"target_lufs": -20}}, "zones": [hall, shop]}, "")
    assert zone_loudness(settings, "hall").lufs == -14 and zone_loudness(settings, "shop").lufs == -20
    assert zone_loudness(Settings(), "default") == LoudnessTarget(-18.0, -1.0, 20.0)
    off = build(Settings, {"audio": {"loudness": {"enabled": False}}}, "")
    assert zone_loudness(off, "default") is None


@pytest.mark.parametrize(
    ("section", "key"),
    [
        (
            {"zones": [{"name": "hall", "loudness": {"true_peak_dbtp": 3}}]},
            "zones[0].loudness.true_peak_dbtp",
        ),
        ({"audio": {"loudness": {"target_lufs": "loud"}}}, "audio.loudness.target_lufs"),
        ({"audio": {"loudness": {"target_lufs": -80}}}, "audio.loudness.target_lufs"),
        ({"audio": {"loudness": {"gain": 3}}}, "audio.loudness.gain"),
    ],
)
def test_a_bad_loudness_value_is_a_config_error_naming_its_key(section, key):
    with pytest.raises(ConfigError) as raised:
        build(Settings, section, "")
    assert str(raised.value).startswith(f"{key}:"), raised.value


def test_the_default_loudness_is_minus_18_lufs_under_minus_1_dbtp():
    assert LoudnessSettings() == LoudnessSettings(True, -18.0, -1.0, 20.0)


def test_a_whole_phrase_put_at_once_is_levelled_like_a_streamed_one():
    rng = np.random.default_rng(8)
    phrase = np.concatenate([compare.speechlike(3, -32, rng) for _ in range(3)])  # a phrase-cache replay
    track = Track("t")
    track.put(phrase)
    track.close()
    sink = FakeSink()
    Playback(
        sink, SETTINGS, ChimeSet.silent(), clock=sink.clock, sleep=sink.clock.sleep, loudness=TARGET
    ).play(track)
    assert abs(lufs(sink.played("t")) - TARGET.lufs) <= 1.0


def test_ending_a_track_early_keeps_each_sample_with_its_own_estimate():
    speech = compare.speechlike(3, -30, np.random.default_rng(1))
    whole, ended = streamed([speech]), Track("t")
    for chunk in compare.chunks(speech):
        ended.put(chunk)
    assert ended.end_at(30000)  # inside the second chunk
    for track in (whole, ended):
        track.attach(("z",))
    cut = ended.take_now_for("z", 10**6)
    assert len(cut.pcm) == len(cut.levels) == 30000
    whole = whole.take_now_for("z", 10**6)
    np.testing.assert_array_equal(cut.levels, whole.levels[:30000])
