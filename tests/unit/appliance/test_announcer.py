"""The announcer in process: the real Engine over the fake runner, the real audio thread, a recording sink.

Sampling is greedy, so every sentence's PCM can be synthesised alone and compared with what was played.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from announcer_rig import LoudRunner, Rig, fake_engine, rig_settings, slow_sink

from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.mqtt.messages import Stop  # noqa

FOUR = "Store notice, part one. Store notice, part two. Store notice, part three. Store notice, part four."


@pytest.fixture
def rigs():
    made: list[Rig] = []

    def make(tmp_path, sink=None, engine=None, **announcements) -> Rig:
        rig = Rig(tmp_path, rig_settings(tmp_path, **announcements), engine or fake_engine())
        if sink is not None:
            rig.sink = rig.playback.sink = sink
        made.append(rig.start())
        return rig

    yield make
    for rig in made:
        rig.close()


def test_an_announcement_plays_every_sentence_in_order_with_every_event(tmp_path, rigs):
    rig = rigs(tmp_path)
    rig.say("a", FOUR)
    rig.wait_for("a", "finished")
    assert rig.kinds("a") == ["queued", "started", "first_audio", "finished"]
    np.testing.assert_array_equal(rig.sink.speech("a"), np.concatenate(rig.sentence_pcm(FOUR)))
    assert list((tmp_path / "spool").glob("*.json")) == []


def test_an_emergency_barges_in_within_a_block_and_the_interrupted_one_resumes_from_its_sentence(
    tmp_path, rigs
):
    rig = rigs(tmp_path, sink=slow_sink())
    rig.say("normal", FOUR)
    rig.wait_for("normal", "first_audio")
    rig.say("alarm", "Fire alarm. Leave the building now.", priority="emergency")
    rig.wait_for("normal", "finished", timeout=60)
    assert rig.sink.order() == ["normal@0", "alarm@0", "normal@1"]
    requeued = [reason for kind, reason in rig.events("normal") if kind == "queued" and reason]
    assert len(requeued) == 1 and "barged in" in requeued[0], rig.events("normal")
    resumed_from = int(requeued[0].rsplit(" ", 1)[1]) - 1  # "... resumes from sentence N"
    sentences = rig.sentence_pcm(FOUR)
    cut = rig.sink.speech("normal", 0)
    whole_before = np.concatenate([np.zeros(0, np.float32), *sentences[:resumed_from]])
    # cut inside the sentence it resumes from
    assert len(whole_before) <= len(cut) < len(whole_before) + len(sentences[resumed_from])
    np.testing.assert_array_equal(cut, np.concatenate(sentences)[: len(cut)])
    np.testing.assert_array_equal(rig.sink.speech("normal", 1), np.concatenate(sentences[resumed_from:]))
    assert rig.kinds("alarm") == ["queued", "started", "first_audio", "finished"]


def test_a_priority_announcement_takes_over_at_the_next_sentence_boundary(tmp_path, rigs):
    rig = rigs(tmp_path, sink=slow_sink(0.01))  # 4x real time: the first sentence plays for ~0.3 s
    rig.say("normal", FOUR)
    rig.wait_for("normal", "first_audio")  # so the priority one arrives during sentence 1
    rig.say("prio", "Customer announcement.", priority="priority")
    rig.wait_for("normal", "finished", timeout=60)
    assert rig.sink.order() == ["normal@0", "prio@0", "normal@1"]
    [reason] = [reason for kind, reason in rig.events("normal") if kind == "queued" and reason]
    assert "took over" in reason
    resumed_from = int(reason.rsplit(" ", 1)[1]) - 1
    assert resumed_from == 1  # the boundary right after the sentence that was playing
    sentences = rig.sentence_pcm(FOUR)
    np.testing.assert_array_equal(rig.sink.speech("normal", 0), np.concatenate(sentences[:resumed_from]))
    np.testing.assert_array_equal(rig.sink.speech("normal", 1), np.concatenate(sentences[resumed_from:]))
    assert "cancelled" not in rig.kinds("normal")


def test_interrupted_cancel_reports_the_barged_in_announcement_cancelled(tmp_path, rigs):
    rig = rigs(tmp_path, sink=slow_sink(), interrupted="cancel")
    rig.say("normal", FOUR)
    rig.wait_for("normal", "first_audio")
    rig.say("alarm", "Fire alarm.", priority="emergency")
    rig.wait_for("alarm", "finished")
    rig.wait_for("normal", "cancelled")
    assert rig.sink.order() == ["normal@0", "alarm@0"]
    assert list((tmp_path / "spool").glob("*.json")) == []


def test_stop_cuts_the_current_one_cancels_its_synthesis_and_the_next_one_plays(tmp_path, rigs):
    rig = rigs(tmp_path, sink=slow_sink())
    rig.say("long", FOUR)
    rig.say("next", "The next one.")
    rig.wait_for("long", "first_audio")
    rig.announcer.stop("current", None, lambda *a, **k: None)
    rig.wait_for("long", "cancelled")
    rig.wait_for("next", "finished")
    assert [reason for kind, reason in rig.events("long") if kind == "cancelled"] == ["stopped"]
    assert len(rig.sink.speech("long")) < len(np.concatenate(rig.sentence_pcm(FOUR)))
    assert not any(rid.startswith("long#") for rid in rig.engine._live)  # nothing of it is synthesised


def test_a_repeated_announcement_plays_twice_then_leaves_the_spool(tmp_path, rigs):
    rig = rigs(tmp_path)
    rig.say("gap", "Mind the gap, please.", repeat=2, repeat_interval=0.05)
    rig.wait_for("gap", "finished", count=2)
    assert rig.kinds("gap") == ["queued"] + ["started", "first_audio", "finished"] * 2
    assert [reason for kind, reason in rig.events("gap") if kind == "finished"] == ["repeats later", ""]
    np.testing.assert_array_equal(rig.sink.speech("gap", 0), rig.sink.speech("gap", 1))
    assert list((tmp_path / "spool").glob("*.json")) == []


def test_an_announcement_whose_time_runs_out_while_waiting_expires_and_its_synthesis_stops(tmp_path, rigs):
    rig = rigs(tmp_path, sink=slow_sink(0.004))
    rig.say("long", FOUR)
    rig.wait_for("long", "first_audio")
    rig.say("stale", "This is too late to matter.", ttl=0.3)
    rig.wait_for("stale", "expired", timeout=10)
    rig.wait_for("long", "finished", timeout=60)
    assert "started" not in rig.kinds("stale") and "stale@0" not in rig.sink.order()
    assert not any(rid.startswith("stale#") for rid in rig.engine._live)


def test_look_ahead_synthesises_the_next_announcements_while_one_plays_within_the_batch_limit(tmp_path, rigs):
    runner = LoudRunner()
    rig = rigs(tmp_path, sink=slow_sink(), engine=fake_engine(runner), lookahead_s=60.0)
    rig.engine.set_max_batch(3)
    in_flight, done = [], threading.Event()

    def watch():  # what the announcer has submitted and not yet collected, running or waiting
        while not done.is_set():
            stats = rig.engine.stats()
            in_flight.append(stats.num_running + stats.num_waiting)
            time.sleep(0.002)

    threading.Thread(target=watch, daemon=True).start()
    for name in ("a", "b", "c"):
        rig.say(name, FOUR)
    rig.wait_for("a", "first_audio")
    # While `a` plays, sentences of `b` and `c` are synthesised too, batched with `a`'s.
    deadline = time.monotonic() + 10
    while not (rig.queue.find("c") and rig.queue.find("c").handles) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rig.kinds("c") == ["queued"]
    rig.wait_for("c", "finished", timeout=60)
    done.set()
    assert max(runner.code_predictor_calls) == 3 and max(in_flight) == 3  # batched, never beyond the limit
    assert rig.engine.stats().mean_batch > 1
    assert rig.sink.order() == ["a@0", "b@0", "c@0"]


def test_without_look_ahead_the_engine_runs_one_sentence_at_a_time(tmp_path, rigs):
    runner = LoudRunner()
    rig = rigs(tmp_path, sink=slow_sink(), engine=fake_engine(runner), lookahead_s=0.0)
    rig.say("a", FOUR)
    rig.say("b", FOUR)
    rig.wait_for("b", "finished", timeout=60)
    assert max(runner.code_predictor_calls) == 1
    sentences = np.concatenate(rig.sentence_pcm(FOUR))
    np.testing.assert_array_equal(rig.sink.speech("b"), sentences)


def test_a_shutdown_with_finish_lets_the_current_announcement_finish_and_starts_nothing_new(tmp_path, rigs):
    rig = rigs(tmp_path, sink=slow_sink(), lookahead_s=0.0)  # its later sentences are not submitted yet
    rig.say("current", FOUR)
    rig.say("waiting", "Still waiting.")
    rig.wait_for("current", "first_audio")
    assert rig.announcer.drain(finish=True, timeout=30)
    assert rig.kinds("current") == ["queued", "started", "first_audio", "finished"]
    np.testing.assert_array_equal(rig.sink.speech("current"), np.concatenate(rig.sentence_pcm(FOUR)))
    assert rig.kinds("waiting") == ["queued"] and "waiting@0" not in rig.sink.order()
    after_restart = AnnouncementQueue(tmp_path / "spool")
    assert [a.id for a in after_restart.replay(time.time())[0]] == ["waiting"]  # still spooled: it plays next time


def test_an_emergency_barges_in_even_while_a_priority_one_waits_for_the_sentence_boundary(tmp_path, rigs):
    rig = rigs(tmp_path, sink=slow_sink(0.004))
    rig.say("normal", FOUR)
    rig.wait_for("normal", "first_audio")
    rig.say("prio", "Customer announcement.", priority="priority")
    rig.say("alarm", "Fire alarm.", priority="emergency")
    rig.wait_for("normal", "finished", timeout=60)
    assert rig.sink.order() == ["normal@0", "alarm@0", "prio@0", "normal@1"]
    [reason] = [reason for kind, reason in rig.events("normal") if kind == "queued" and reason]
    assert "barged in" in reason
