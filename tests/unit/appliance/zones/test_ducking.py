"""Ducking around one track's playback, with recording backends and a fake clock (no threads, no sleeps).

The ramps step every backend down before the chime and up again after the last sample heard; a cut or
a failed output raises them too; a backend that fails is logged once and the announcement plays on;
the ALSA mixer backend (through a fake mixer: this machine has no sound card) records, restores exactly
and puts back at start what a crash left lowered.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from audio_fakes import FakeSink

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.audio.track import HowToPlay, Track
from qwen3tts.appliance.zones.ducking.alsa import AlsaMixerDuck, Amixer, parse_playback
from qwen3tts.appliance.zones.ducking.mqtt import MqttDuck
from qwen3tts.appliance.zones.ducking.zone_ducking import DuckError, ZoneDucking, ramp_steps
from qwen3tts.errors import AudioError
from qwen3tts.settings import AlsaMixerDuckSettings, AudioSettings, DuckingSettings

AUDIO = AudioSettings(lead_in_ms=50, tail_ms=20, fade_ms=10, block_ms=10, jitter_buffer_ms=0)
CHIME = np.full(1000, 0.5, dtype=np.float32)
DUCKING = DuckingSettings(level_db=-20.0, ramp_in_ms=200, ramp_out_ms=400, mqtt_topic="t")


class Recording:
    """A backend that records every call with the fake clock's time; `fail` names calls that raise."""

    def __init__(self, clock, name: str = "rec", fail: tuple[str, ...] = ()) -> None:
        self.clock, self.name, self.fail = clock, name, fail
        self.calls: list[tuple[str, object, float]] = []

    def _note(self, what: str, arg: object = None) -> None:
        self.calls.append((what, arg, self.clock()))
        if what in self.fail:
            raise DuckError(f"{what} refused")

    def lower(self, announcement, level_db, ramp_ms):
        self._note("lower", announcement)

    def step(self, db):
        self._note("step", db)

    def raise_back(self, announcement, ramp_ms):
        self._note("raise", announcement)

    def hand_over(self, previous, announcement, level_db):
        self._note("hand_over", (previous, announcement))

    def restored(self):
        self._note("restored")

    def recover(self):
        self._note("recover")
        return True

    def steps(self) -> list[float]:
        return [arg for what, arg, _ in self.calls if what == "step"]


def track(label: str = "a1", samples: int = 4800) -> Track:
    t = Track(label)
    t.how = HowToPlay()
    t.put(np.full(samples, 0.25, dtype=np.float32))
    t.close()
    return t


def make(backends, sink=None):
    sink = sink or FakeSink()
    ducking = ZoneDucking("hall", DUCKING, backends, sleep=sink.clock.sleep)
    chimes = ChimeSet({"normal": CHIME, "priority": None, "emergency": CHIME})
    playback = Playback(sink, AUDIO, chimes, clock=sink.clock, sleep=sink.clock.sleep, ducking=ducking)
    return playback, sink


def test_ramp_steps_end_on_the_level():
    assert ramp_steps(-20.0, 200) == pytest.approx([-5.0, -10.0, -15.0, -20.0])
    assert ramp_steps(-12.0, 0) == [-12.0]  # no ramp: one step straight down


def test_the_chime_starts_after_the_ramp_in_and_the_ramp_out_follows_the_last_sample():
    sink = FakeSink()
    backend = Recording(sink.clock)
    playback, _ = make([backend], sink)
    t0 = sink.clock()
    playback.play(track())
    assert [what for what, _, _ in backend.calls][:1] == ["lower"]
    lowered_at = next(t for what, arg, t in backend.calls if what == "step" and arg == -20.0)
    begin_at = sink.events[0][2]
    assert begin_at >= lowered_at and begin_at - t0 == pytest.approx(0.2)  # the chime waits for the ramp
    assert backend.steps()[:4] == pytest.approx([-5.0, -10.0, -15.0, -20.0])
    assert backend.steps()[4:] == pytest.approx([-17.5, -15.0, -12.5, -10.0, -7.5, -5.0, -2.5, 0.0])
    raise_at = next(t for what, _, t in backend.calls if what == "raise")
    assert raise_at >= sink.writes[-1].t_after  # only after the last sample was written
    assert backend.calls[-1][0] == "restored"
    assert backend.calls[-1][2] - raise_at == pytest.approx(0.4)  # the ramp out took its time


def test_a_cut_and_a_failed_output_both_raise_it_again():
    cut_sink = FakeSink()
    backend = Recording(cut_sink.clock)
    playback, _ = make([backend], cut_sink)
    cut = track("cut", samples=48000)
    cut_sink.on_write = lambda sink, write: cut.cut() if len(sink.writes) == 30 else None
    playback.play(cut)
    assert cut.is_cut and [c[0] for c in backend.calls].count("restored") == 1

    failing = FakeSink(fail_begin=AudioError("device gone"))
    backend = Recording(failing.clock)
    playback, _ = make([backend], failing)
    broken = track("broken")
    playback.play(broken)
    assert broken.zones()["default"].error and [c[0] for c in backend.calls][-1] == "restored"


def test_a_failing_backend_is_logged_once_and_the_announcement_plays_on(caplog):
    sink = FakeSink()
    bad, good = Recording(sink.clock, "bad", fail=("lower",)), Recording(sink.clock, "good")
    playback, _ = make([bad, good], sink)
    with caplog.at_level(logging.WARNING):
        for label in ("a1", "a2", "a3"):
            t = track(label)
            playback.play(t)
            assert t.played_out and t.error is None
    warnings = [r for r in caplog.records if "ducking on bad failed" in r.getMessage()]
    assert len(warnings) == 1
    assert [c[0] for c in bad.calls] == ["lower"] * 3  # never stepped, never raised: it never lowered
    assert [c[0] for c in good.calls].count("restored") == 3


def test_an_unexpected_exception_in_a_backend_does_not_fail_the_track():
    sink = FakeSink()

    class Broken(Recording):
        def step(self, db):
            raise ZeroDivisionError("a bug")

    broken = Broken(sink.clock, "broken")
    playback, _ = make([broken], sink)
    t = track()
    playback.play(t)
    assert t.played_out and t.error is None


class FakeMixer:
    """An ALSA simple control: raw 0..100 mapped linearly onto -50..0 dB (0.5 dB a step)."""

    name = "alsa-mixer:fake/Master"

    def __init__(self, raw: int = 80) -> None:
        self.raw = raw
        self.history: list[int] = []

    def read(self):
        return self.raw, self.raw * 0.5 - 50.0

    def set_db(self, db):
        self.set_raw(round((max(-50.0, db) + 50.0) / 0.5))

    def set_raw(self, raw):
        self.raw = max(0, min(100, raw))
        self.history.append(self.raw)


def test_the_alsa_mixer_goes_down_by_the_level_and_back_exactly(tmp_path):
    sink = FakeSink()
    mixer = FakeMixer(raw=81)  # -9.5 dB
    duck = AlsaMixerDuck("hall", AlsaMixerDuckSettings(control="Master"), tmp_path, mixer=mixer)
    playback, _ = make([duck], sink)
    playback.play(track())
    assert min(mixer.history) == 41  # -9.5 - 20 = -29.5 dB
    assert mixer.raw == 81 and mixer.history[-1] == 81
    assert not duck.record.pending()


def test_a_crash_left_the_mixer_lowered_and_the_next_start_raises_it(tmp_path):
    mixer = FakeMixer(raw=90)
    crashed = AlsaMixerDuck("hall", AlsaMixerDuckSettings(control="Master"), tmp_path, mixer=mixer)
    crashed.lower("a1", -20.0, 0)
    crashed.step(-20.0)  # ... and the daemon dies here
    assert mixer.raw == 50 and crashed.record.pending()["raw"] == "90"
    again = AlsaMixerDuck("hall", AlsaMixerDuckSettings(control="Master"), tmp_path, mixer=mixer)
    ZoneDucking("hall", DUCKING, [again]).recover()
    assert mixer.raw == 90 and not again.record.pending()


def test_amixer_output_is_parsed_and_a_control_without_db_is_refused():
    text = "Simple mixer control 'Master',0\n  Mono: Playback 60 [69%] [-17.25dB] [on]\n"
    assert parse_playback(text, "Master") == (60, -17.25)
    with pytest.raises(DuckError, match="no dB scale"):
        parse_playback("  Mono: Playback 60 [69%] [on]\n", "Master")
    with pytest.raises(DuckError, match="no playback volume"):
        parse_playback("Simple mixer control 'Capture',0\n", "Capture")


def test_a_restore_that_failed_is_tried_again_while_idle_not_more_than_every_few_seconds():
    sink = FakeSink()
    flaky = Recording(sink.clock, "flaky", fail=("restored",))
    ducking = ZoneDucking("hall", DUCKING, [flaky], sleep=sink.clock.sleep, clock=sink.clock)
    ducking.recover()  # at start: nothing recorded
    ducking.duck("a1")
    ducking.unduck("a1")  # the restore fails: still lowered, still recorded
    flaky.fail = ()
    ducking.recover()
    ducking.recover()  # at once again: not yet
    assert [c[0] for c in flaky.calls].count("recover") == 1
    sink.clock.advance(5.0)
    ducking.recover()
    assert [c[0] for c in flaky.calls].count("recover") == 2


def test_a_track_already_waiting_takes_the_duck_over_without_ramps():
    sink = FakeSink()
    backend = Recording(sink.clock)
    playback, _ = make([backend], sink)
    first, alarm = track("n1", samples=24000), track("e1")

    def barge_in(sink, write):
        if len(sink.writes) == 5:
            playback.play_next(alarm)
            first.cut()

    sink.on_write = barge_in
    playback.play(first)
    assert playback._next is alarm  # handed over, as the announcer does
    t_first_ended = sink.clock()
    playback._next = None
    playback.play(alarm)
    kinds = [what for what, _, _ in backend.calls]
    assert kinds.count("lower") == 1 and kinds.count("restored") == 1  # one duck across both tracks
    assert ("hand_over", ("n1", "e1")) in [(what, arg) for what, arg, _ in backend.calls]
    assert backend.steps()[:4] == pytest.approx([-5.0, -10.0, -15.0, -20.0])
    assert backend.steps()[4:] == pytest.approx([-17.5, -15.0, -12.5, -10.0, -7.5, -5.0, -2.5, 0.0])
    assert [e for e in sink.events if e[0] == "begin"][1][2] == t_first_ended  # no ramp before the alarm


def test_a_held_duck_that_no_track_takes_over_is_raised_while_idle():
    sink = FakeSink()
    backend = Recording(sink.clock)
    ducking = ZoneDucking("hall", DUCKING, [backend], sleep=sink.clock.sleep, clock=sink.clock)
    ducking.duck("a1")
    ducking.unduck("a1", hold=True)
    assert "restored" not in [what for what, _, _ in backend.calls]
    ducking.recover()
    assert "restored" in [what for what, _, _ in backend.calls]


def test_amixer_is_called_with_the_card_and_control_and_a_failure_is_a_duck_error(tmp_path, monkeypatch):
    """A stand-in `amixer` on PATH (this machine has no sound card) records its arguments."""
    log = tmp_path / "calls"
    script = tmp_path / "amixer"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {log}\n'
        'case "$*" in *Missing*) echo "Unable to find simple control" >&2; exit 1;; esac\n'
        "echo \"Simple mixer control 'Master',0\"\n"
        'echo "  Mono: Playback 60 [69%] [-17.25dB] [on]"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    mixer = Amixer("1", "Master")
    assert mixer.read() == (60, -17.25)
    mixer.set_db(-37.25)
    mixer.set_raw(60)
    assert log.read_text().splitlines() == [
        "-c 1 -- sget Master",
        "-c 1 -- sset Master -37.25dB",
        "-c 1 -- sset Master 60",
    ]
    with pytest.raises(DuckError, match="Unable to find simple control"):
        Amixer("", "Missing").read()


def test_the_real_amixer_takes_a_negative_level_as_a_level_not_as_options():
    """No sound card here: amixer fails on the card, and must not fail on the arguments before that."""
    with pytest.raises(DuckError) as failed:
        Amixer("7", "Master").set_db(-37.25)
    assert "invalid option" not in str(failed.value) and "card" in str(failed.value).lower()


def test_an_mqtt_duck_that_could_not_be_sent_owes_no_unduck(tmp_path):
    sent = []
    up = {"connected": False}
    duck = MqttDuck("hall", "home/hall/duck", lambda **m: up["connected"] and not sent.append(m), tmp_path)
    ducking = ZoneDucking("hall", DUCKING, [duck], sleep=lambda s: None)
    ducking.duck("a1")  # no MQTT client yet: logged, the announcement plays on
    ducking.unduck("a1")
    up["connected"] = True
    ducking.recover()
    assert sent == [] and not duck.record.pending()
    ducking.duck("a2")
    ducking.unduck("a2")
    assert [(m["action"], m["id"], m["ramp_ms"]) for m in sent] == [
        ("duck", "a2", 200),
        ("unduck", "a2", 400),
    ]
