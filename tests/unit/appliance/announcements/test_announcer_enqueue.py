"""What the announcer does with an accepted announcement the intake hands over: spooled, then `queued`
and acknowledged; `rejected` when the queue is full; a duplicate id or the broker's redelivery of a
spooled message dropped; identical id-less messages with their own packet ids all kept (issue 27 item
7), also across a restart."""

from __future__ import annotations

import logging
import threading

from announcer_fakes import TurnRig

NO_ID = "No id here."


def acked(ann_id: str) -> tuple[list[str], object]:
    """A list of acknowledgements and the `ack` that appends `ann_id` to it."""
    acks: list[str] = []
    return acks, lambda: acks.append(ann_id)


def test_a_full_queue_rejects_with_the_reason_and_the_warnings_and_spools_nothing(tmp_path):
    rig = TurnRig(tmp_path, queue={"max_queue": 2})
    rig.say("playing", "This one plays.")
    rig.turn()  # it is current, no longer waiting
    rig.say("w1", "First waiting.")
    rig.say("w2", "Second waiting.")
    acks, ack = acked("over")
    rig.say("over", "One too many.", warnings=("ignored field 'colour'",), ack=ack)
    rig.turn()
    assert rig.events("over") == [("rejected", "queue full (2 announcements waiting)")]
    assert rig.recorder.emitted[-1].warnings == ("ignored field 'colour'",)
    assert acks == ["over"]  # refused is answered: the broker must not deliver it forever
    assert rig.spooled() == ["playing", "w1", "w2"]


def test_the_queued_event_carries_the_intake_s_warnings(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("a", "Hello.", warnings=("ignored field 'colour'",))
    rig.turn()
    [queued] = rig.recorder.emitted
    assert (queued.event, queued.warnings) == ("queued", ("ignored field 'colour'",))


def test_a_duplicate_id_is_dropped_without_an_event_and_acknowledged(tmp_path, caplog):
    rig = TurnRig(tmp_path)
    rig.say("same", "The first one.")
    acks, ack = acked("same")
    rig.say("same", "Sent again with the same id.", ack=ack)
    with caplog.at_level(logging.INFO, logger="qwen3tts.appliance.announcements"):
        rig.turn()
    assert rig.events("same") == [("queued", "")] and acks == ["same"]
    assert "same: dropped, a duplicate of an announcement already accepted" in caplog.text
    assert rig.spooled() == ["same"]


def test_a_redelivery_of_a_spooled_message_is_dropped_and_a_new_packet_with_the_same_text_is_not(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("gen-1", NO_ID, message_id=7)  # the intake gave the id-less message an id of its own
    rig.say("gen-2", NO_ID, message_id=7, redelivered=True)  # DUP: the broker sends it again
    rig.say("gen-3", NO_ID, message_id=8, redelivered=True)  # DUP, but another packet
    rig.say("gen-4", NO_ID, message_id=7)  # packet id 7 again, no DUP: a new message
    rig.turn()
    assert [(e.id, e.event) for e in rig.recorder.emitted] == [("gen-1", "queued"), ("gen-3", "queued"),
                                                               ("gen-4", "queued")]  # fmt: skip
    assert rig.spooled() == ["gen-1", "gen-3", "gen-4"]


def test_identical_id_less_messages_are_all_kept_also_across_a_restart(tmp_path):
    rig = TurnRig(tmp_path, lookahead_s=0.0)
    for n in range(1, 6):
        rig.say(f"gen-{n}", NO_ID, message_id=100 + n)
    rig.turn()
    assert [e.event for e in rig.recorder.emitted] == ["queued"] * 5
    rig.announcer.drain(finish=False, timeout=0)  # SIGTERM: the first one is cut, all stay spooled
    rig.run(lambda: rig.announcer.current is None)

    after = TurnRig(tmp_path)
    stopped = threading.Event()
    stopped.set()
    after.announcer.run(stopped)  # replays the spool, no turn yet
    after.say("gen-9", NO_ID, message_id=103, redelivered=True)  # the broker redelivers one of them
    after.run(lambda: [e.event for e in after.recorder.emitted].count("finished") == 5)
    assert after.playback.order() == [f"gen-{n}@0" for n in range(1, 6)]
    assert after.kinds("gen-9") == []
