"""Stop commands and expiry through `Announcer.turn()`: the answers (`stopped`, `not_found`), the
`cancelled` / `expired` events, and the synthesis of what was stopped cancelled in the engine."""

from __future__ import annotations

import logging
import threading

import pytest
from announcer_fakes import FOUR, TurnRig

from qwen3tts.appliance.announcements.commands import NOT_FOUND


class Answers(list):
    def __call__(self, event, **fields):
        self.append((event, fields))


def playing_with_two_waiting(tmp_path) -> TurnRig:
    """`long` plays (its second half still synthesised); `next` and `last` wait, synthesised ahead."""
    rig = TurnRig(tmp_path, max_batch=8)
    rig.say("long", FOUR)
    rig.say("next", "The next one.")
    rig.say("last", "The last one.")
    rig.turn()
    for handle in rig.engine.of("long")[:2]:
        handle.speak()
    rig.run_until_event("long", "first_audio", speak=False)
    assert [h.request.id for h in rig.engine.live()] == ["long#2", "long#3", "next#4", "last#5"]
    return rig


def test_stop_current_cuts_it_within_a_block_cancels_its_synthesis_and_the_next_one_plays(tmp_path):
    rig = playing_with_two_waiting(tmp_path)
    long_ = rig.announcer.current
    running = rig.engine.live("long")
    answers = Answers()
    rig.announcer.stop("current", None, answers)
    rig.turn()
    assert answers == [("stopped", {"scope": "current", "cancelled": ()})]
    assert long_.track.is_cut and all(h.cancelled for h in running)
    assert rig.engine.live("next") and rig.engine.live("last")  # the waiting ones are not touched
    heard = long_.track.taken
    assert rig.playback.block() == 0 and long_.track.taken == heard
    rig.turn()
    assert rig.events("long")[-1] == ("cancelled", "stopped") and rig.play("long") is None
    rig.run_until_event("last", "finished")
    assert rig.playback.order() == ["long@0", "next@0", "last@0"]
    assert rig.spooled() == []


def test_stop_all_cancels_the_waiting_ones_at_once_and_cuts_the_current_one(tmp_path):
    rig = playing_with_two_waiting(tmp_path)
    answers = Answers()
    rig.announcer.stop("all", None, answers)
    rig.turn()
    assert answers == [("stopped", {"scope": "all", "cancelled": ("next", "last")})]
    assert rig.events("next")[-1] == rig.events("last")[-1] == ("cancelled", "stop")
    assert rig.engine.live() == []  # nothing of any of them is synthesised any more
    assert rig.spooled() == ["long"]  # until its cut has been heard
    rig.playback.block()
    rig.turn()
    assert rig.events("long")[-1] == ("cancelled", "stopped")
    rig.turn(3)
    assert rig.playback.order() == ["long@0"] and rig.spooled() == [] and len(rig.queue) == 0


def test_stop_id_of_a_waiting_one_cancels_it_and_its_look_ahead_and_the_current_one_plays_on(tmp_path):
    rig = playing_with_two_waiting(tmp_path)
    [ahead] = rig.engine.live("next")
    answers = Answers()
    rig.announcer.stop("id", "next", answers)
    rig.turn()
    assert answers == [("stopped", {"id": "next", "scope": "id", "cancelled": ("next",)})]
    assert rig.events("next") == [("queued", ""), ("cancelled", "stop")] and ahead.cancelled
    assert rig.announcer.current.id == "long" and not rig.announcer.current.track.is_cut
    rig.run_until_event("last", "finished")
    assert rig.playback.order() == ["long@0", "last@0"]
    assert rig.kinds("long")[-1] == "finished"


def test_stop_id_of_the_playing_one_cuts_it(tmp_path):
    rig = playing_with_two_waiting(tmp_path)
    answers = Answers()
    rig.announcer.stop("id", "long", answers)
    rig.run_until_event("long", "cancelled")
    assert answers == [("stopped", {"id": "long", "scope": "id"})]
    assert rig.events("long")[-1] == ("cancelled", "stopped")


def test_stop_id_of_an_unknown_one_answers_not_found_and_changes_nothing(tmp_path, caplog):
    rig = playing_with_two_waiting(tmp_path)
    answers = Answers()
    with caplog.at_level(logging.INFO, logger="qwen3tts.appliance.announcements.commands"):
        rig.announcer.stop("id", "nobody", answers)
        rig.turn()
    assert answers == [("not_found", {"id": "nobody", "scope": "id", "reason": NOT_FOUND})]
    assert "no announcement nobody is waiting or playing" in caplog.text
    assert not rig.announcer.current.track.is_cut and len(rig.engine.live()) == 4


@pytest.mark.parametrize("scope", ["current", "all"])
def test_stop_with_nothing_playing_still_answers(tmp_path, scope):
    rig = TurnRig(tmp_path)
    answers = Answers()
    rig.announcer.stop(scope, None, answers)
    rig.turn()
    assert answers == [("stopped", {"scope": scope, "cancelled": ()})]


def test_one_whose_time_runs_out_while_waiting_expires_and_its_synthesis_is_cancelled(tmp_path):
    rig = TurnRig(tmp_path, max_batch=8)
    rig.say("long", FOUR)
    rig.say("stale", "This is too late to matter.", expires_at=rig.clock() + 2.0)
    rig.turn()
    [ahead] = rig.engine.live("stale")  # synthesised ahead while `long` plays
    rig.engine.of("long")[0].speak()
    rig.run_until_event("long", "first_audio", speak=False)
    rig.clock.advance(2.0)
    rig.turn()
    assert rig.events("stale") == [("queued", ""), ("expired", "time to live ran out before it could play")]
    assert ahead.cancelled and rig.play("stale") is None and rig.queue.find("stale") is None
    assert rig.spooled() == ["long"]
    rig.run_until_event("long", "finished")
    rig.turn(3)
    assert rig.playback.order() == ["long@0"]


def test_one_that_expired_before_it_was_queued_is_reported_and_its_id_remembered(tmp_path):
    rig = TurnRig(tmp_path)
    acks = []
    rig.say("late", "Too late.", expires_at=rig.clock() - 1, ack=lambda: acks.append(1))
    rig.turn()
    assert rig.events("late") == [("expired", "expired before it was queued")] and acks == [1]
    rig.say("late", "Too late.")  # the same id again: a duplicate, dropped without an event
    rig.turn()
    assert rig.events("late") == [("expired", "expired before it was queued")] and rig.spooled() == []


def test_spooled_ones_that_expired_while_the_appliance_was_down_are_reported_at_start(tmp_path):
    before = TurnRig(tmp_path)
    before.say("stale", "Old news.", expires_at=before.clock() + 60)
    before.say("fresh", "Still news.")
    before.turn()
    after = TurnRig(tmp_path)
    after.clock.advance(120)
    already_stopped = threading.Event()
    already_stopped.set()
    after.announcer.run(already_stopped)  # replays the spool, then no turn
    assert after.events("stale") == [("expired", "expired while the appliance was down")]
    after.run_until_event("fresh", "finished")
    assert after.events("fresh") == [("started", ""), ("first_audio", ""), ("finished", "")]


@pytest.mark.parametrize("scope", ["all", "current", "id"])
def test_a_stop_in_the_block_a_barge_in_takes_to_fade_still_stops_the_interrupted_one(tmp_path, scope):
    rig = playing_with_two_waiting(tmp_path)
    rig.say("alarm", "Fire alarm.", priority="emergency")
    rig.turn()
    assert rig.announcer.current.id == "long" and rig.announcer.current.track.is_cut  # fading out
    answers = Answers()
    rig.announcer.stop(scope, "long" if scope == "id" else None, answers)
    rig.turn()
    assert answers[0][0] == "stopped"
    rig.run(lambda: rig.announcer.current is None or rig.announcer.current.id != "long")
    rig.turn(3)
    assert rig.events("long")[-1] == ("cancelled", "stopped")  # stopped, not waiting to resume
    assert rig.queue.find("long") is None and "long" not in rig.spooled()


@pytest.mark.parametrize("first", ["stop", "shutdown"])
def test_a_stop_and_a_shutdown_in_the_same_fade_leave_it_stopped_not_spooled_to_replay(tmp_path, first):
    rig = playing_with_two_waiting(tmp_path)
    commands = {
        "stop": lambda: rig.announcer.stop("current", None, Answers()),
        "shutdown": lambda: rig.announcer.drain(finish=False, timeout=0),
    }
    commands[first]()
    rig.turn()
    commands["shutdown" if first == "stop" else "stop"]()
    rig.run(lambda: rig.announcer.current is None)
    assert rig.events("long")[-1] == ("cancelled", "stopped")
    assert rig.spooled() == ["next", "last"]  # the waiting ones replay after the restart; `long` is gone
