"""One announcement's life through `Announcer.turn()`, step by step: queued, synthesised piece by piece,
played, finished; repeats; volume, mute and voice commands; shutdown. Fake engine, playback and clock
(tests/support/announcer_fakes.py): nothing runs unless the test says so."""

from __future__ import annotations

import numpy as np
from announcer_fakes import FOUR, TurnRig, expected_pcm, fake_speech, pieces

from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.audio.track import HowToPlay
from qwen3tts.appliance.priority import Priority


def test_an_announcement_plays_every_piece_in_order_with_every_event(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("a", FOUR)
    assert rig.events() == []  # only posted: nothing happens before the announcer's turn
    rig.turn()
    assert rig.events("a") == [("queued", "")]
    [track] = rig.playback.handed  # it became the current one at once and went to the audio thread
    play = rig.play("a")
    assert track is play.track and track.how == HowToPlay(Priority.NORMAL, None, 1.0)
    assert rig.engine.texts("a") == pieces(FOUR)  # all four pieces at once: 20 s look-ahead, batch 4
    assert [h.request.id for h in rig.engine.of("a")] == ["a#0", "a#1", "a#2", "a#3"]
    first, second, third, fourth = rig.engine.of("a")

    second.speak()  # a later piece's PCM waits in its handle until the ones before it are complete
    first.produce(fake_speech(first.request.text)[:1000])
    rig.turn()
    assert track.received == 1000 and play.ends == []
    first.finish(fake_speech(first.request.text)[1000:])
    rig.turn()
    assert play.ends == [2400, 4800] and track.received == 4800 and not track.closed

    rig.playback.block()  # the audio thread starts the track and takes its first block
    assert rig.kinds("a") == ["queued"]
    rig.clock.advance(0.5)
    rig.turn()
    assert rig.kinds("a") == ["queued", "started", "first_audio"]
    assert play.t_started == play.t_first_audio == 1000.0 and rig.announcer.playing == [play]

    third.speak()
    fourth.speak()
    rig.turn()
    assert track.closed and play.handles() == []  # every piece is in: nothing more comes
    while rig.playback.block():
        pass
    assert rig.kinds("a")[-1] == "first_audio"  # ended in the audio thread, reported on the next turn
    rig.turn()
    assert rig.events("a") == [("queued", ""), ("started", ""), ("first_audio", ""), ("finished", "")]
    np.testing.assert_array_equal(rig.playback.speech("a"), expected_pcm(FOUR))
    assert rig.play("a") is None and rig.announcer.current is None
    assert rig.spooled() == [] and len(rig.queue) == 0


def test_the_acknowledgement_comes_after_the_spool_write(tmp_path):
    rig = TurnRig(tmp_path)
    spooled_at_ack = []
    rig.say("a", "Mind the gap.", ack=lambda: spooled_at_ack.append(rig.spooled()))
    rig.turn()
    assert spooled_at_ack == [["a"]]
    rig.turn()
    assert spooled_at_ack == [["a"]]  # once


def test_the_next_announcement_starts_after_the_current_one_ended(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("a", "The first one.")
    rig.say("b", "The second one.")
    rig.run_until_event("b", "finished")
    assert rig.playback.order() == ["a@0", "b@0"]
    assert rig.kinds("a") == rig.kinds("b") == ["queued", "started", "first_audio", "finished"]
    finished_a = [e.event for e in rig.recorder.emitted].index("finished")
    assert [(e.id, e.event) for e in rig.recorder.emitted][finished_a + 1] == ("b", "started")


def test_a_repeated_announcement_waits_its_interval_plays_again_then_leaves_the_spool(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("gap", "Mind the gap, please.", repeat=2, repeat_interval=30.0)
    rig.run_until_event("gap", "finished")
    assert rig.events("gap")[-1] == ("finished", "repeats later")
    gap = rig.queue.find("gap")
    assert gap.plays_done == 1 and rig.spooled() == ["gap"]  # waits again; a crash still repeats it
    assert gap.not_before == rig.clock() + 30.0
    rig.turn(5)
    assert rig.kinds("gap").count("started") == 1 and rig.announcer.current is None  # not before its time
    rig.clock.advance(30.0)
    rig.run_until_event("gap", "finished", count=2)
    assert rig.kinds("gap") == ["queued"] + ["started", "first_audio", "finished"] * 2
    assert rig.events("gap")[-1] == ("finished", "")
    np.testing.assert_array_equal(rig.playback.speech("gap", 1), rig.playback.speech("gap", 0))
    assert len(rig.engine.of("gap")) == 2  # no phrase replay here: synthesised for each play
    assert rig.spooled() == [] and rig.queue.find("gap") is None


def test_volume_and_mute_go_on_the_next_tracks_and_an_emergency_keeps_its_own_volume(tmp_path):
    rig = TurnRig(tmp_path)
    answers = []
    rig.say("before", "Playing at full volume.")
    rig.turn()
    playing = rig.announcer.current.track
    rig.announcer.set_volume(0.5, lambda event, **fields: answers.append((event, fields)))
    rig.turn()
    assert answers == [("volume_set", {"volume": 0.5})] and rig.announcer.volume == 0.5
    assert playing.how.gain == 1.0  # what plays keeps its gain: volume applies from the next one
    rig.run_until_event("before", "finished")

    rig.say("own", "Half of half.", volume=0.5)
    rig.run_until_event("own", "started")
    assert rig.announcer.current.track.how == HowToPlay(Priority.NORMAL, None, 0.25)
    rig.run_until_event("own", "finished")

    rig.announcer.set_muted(True)
    rig.say("muted", "Nobody hears this.", chime="none")
    rig.run_until_event("muted", "started")
    assert rig.announcer.current.track.how == HowToPlay(Priority.NORMAL, "none", 0.0)
    rig.run_until_event("muted", "finished")

    rig.say("alarm", "Fire alarm.", priority="emergency", volume=0.8)
    rig.run_until_event("alarm", "started")
    assert rig.announcer.current.track.how == HowToPlay(Priority.EMERGENCY, None, 0.8)  # no master, no mute
    rig.run_until_event("alarm", "finished")
    rig.announcer.set_muted(False)
    rig.say("after", "Back at half volume.", priority="priority")
    rig.run_until_event("after", "started")
    assert rig.announcer.current.track.how == HowToPlay(Priority.PRIORITY, None, 0.5)


def test_voice_set_and_new_defaults_reach_the_next_requests_and_an_announcement_s_own_voice_wins(tmp_path):
    rig = TurnRig(tmp_path)
    answers = []
    rig.announcer.set_voice("anna", lambda event, **fields: answers.append((event, fields)))
    rig.announcer.set_defaults({"language": "german", "instruct": "calm"})
    rig.say("default", "Guten Tag.")
    rig.say("own", "Good day.", voice="ryan", lang="english", instruct="cheerful")
    rig.turn()
    assert answers == [("voice_set", {"voice": "anna"})]
    assert (rig.defaults.voice, rig.defaults.language, rig.defaults.instruct) == ("anna", "german", "calm")
    [default] = rig.engine.of("default")
    [own] = rig.engine.of("own")  # the next one is synthesised ahead too
    assert (default.request.speaker, default.request.language, default.request.instruct) == (
        "anna", "german", "calm",
    )  # fmt: skip
    assert (own.request.speaker, own.request.language, own.request.instruct) == (
        "ryan", "english", "cheerful",
    )  # fmt: skip


def test_a_shutdown_with_finish_lets_the_current_one_finish_and_starts_nothing_new(tmp_path):
    rig = TurnRig(tmp_path, lookahead_s=0.0)  # the current one's later pieces are not submitted yet
    rig.say("current", FOUR)
    rig.say("waiting", "Still waiting.")
    rig.run_until_event("current", "first_audio")
    assert rig.announcer.drain(finish=True, timeout=0) is False  # only posted; the loop carries it out
    acks = []
    rig.say("late", "Too late to be queued.", ack=lambda: acks.append("late"))
    rig.run(lambda: rig.announcer.current is None)
    assert rig.announcer.drain(finish=True, timeout=0) is True
    assert rig.kinds("current") == ["queued", "started", "first_audio", "finished"]
    np.testing.assert_array_equal(rig.playback.speech("current"), expected_pcm(FOUR))
    assert rig.kinds("waiting") == ["queued"] and rig.engine.of("waiting") == []
    assert rig.kinds("late") == [] and acks == []  # not acknowledged: the broker delivers it again
    assert rig.playback.order() == ["current@0"]
    after_restart = AnnouncementQueue(rig.settings.announcements.spool_dir)
    assert [a.id for a in after_restart.replay(rig.clock())[0]] == ["waiting"]


def test_a_shutdown_with_cut_ends_the_current_one_within_a_block_and_keeps_it_spooled_to_replay(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("current", FOUR)
    rig.say("waiting", "Still waiting.")
    rig.turn()
    current = rig.play("current")
    rig.engine.of("current")[0].speak()  # only its first piece is in
    rig.run_until_event("current", "first_audio", speak=False)
    track = current.track
    synthesising = rig.engine.live()
    assert [h.request.id for h in synthesising] == ["current#1", "current#2", "current#3", "waiting#4"]
    rig.announcer.drain(finish=False, timeout=0)
    rig.turn()
    assert track.is_cut and not track.keep_partial  # half an announcement is no recording
    assert all(h.cancelled for h in synthesising)
    heard = len(rig.playback.heard(track))
    assert rig.playback.block() == 0 and track.ended and not track.played_out
    assert len(rig.playback.heard(track)) == heard  # not one sample after the cut
    rig.turn()
    assert rig.announcer.current is None and rig.announcer.drain(finish=False, timeout=0)
    assert rig.kinds("current") == ["queued", "started", "first_audio"]  # no end: it plays after the restart
    replayed, _ = AnnouncementQueue(rig.settings.announcements.spool_dir).replay(rig.clock())
    assert [(a.id, a.cursor, a.attempts) for a in replayed] == [("current", 0, 0), ("waiting", 0, 0)]


def test_what_the_text_front_end_could_not_read_is_said_in_started(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("ko", "열차는 14:05에 출발합니다.", lang="korean")  # Korean times stay as written
    rig.say("en", "The 14:05 leaves from platform 3.")
    rig.run(lambda: {"ko", "en"} <= {e.id for e in rig.recorder.emitted if e.event == "finished"})
    started = {e.id: e.warnings for e in rig.recorder.emitted if e.event == "started"}
    assert started == {"ko": ("left as written (no reading for it): '14:05에'",), "en": ()}
    queued = [e.warnings for e in rig.recorder.emitted if e.event == "queued"]
    assert queued == [(), ()]  # the intake's warnings only; the reading's come when it is prepared
