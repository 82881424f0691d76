"""The outgoing backlog (mqtt/backlog.py): unacknowledged QoS 1 publishes counted by packet id, whatever
order paho's thread and the publishing thread see them in; reading waits while too many are out."""

from __future__ import annotations

import logging
import threading

from qwen3tts.appliance.mqtt.backlog import MAX_EARLY, Backlog


def test_sent_and_acked_packets_are_counted_by_id_also_when_the_ack_comes_first():
    backlog = Backlog(high_water=10)
    backlog.sent(1)
    backlog.sent(2)
    backlog.acked(1)
    assert len(backlog) == 1
    backlog.acked(3)  # paho's thread was quicker than the one that published packet 3
    backlog.sent(3)
    assert len(backlog) == 1  # 3 never counts as pending
    backlog.acked(2)
    assert len(backlog) == 0


def test_acks_of_packets_nobody_counted_are_forgotten_past_a_bound():
    backlog = Backlog(high_water=10)
    for mid in range(MAX_EARLY + 10):
        backlog.acked(mid)  # e.g. the `online` message paho publishes itself at every connect
    backlog.sent(0)  # its early ack was forgotten: it is pending now
    assert len(backlog) == 1


def test_reading_waits_while_the_backlog_is_at_the_high_water_mark_and_goes_on_once_acked(caplog):
    backlog = Backlog(high_water=2)
    backlog.sent(1)
    assert backlog.wait_for_room(0.0)
    backlog.sent(2)
    with caplog.at_level(logging.INFO):
        assert not backlog.wait_for_room(0.01)
        released = threading.Timer(0.05, backlog.acked, args=(1,))
        released.start()
        assert backlog.wait_for_room(5.0)  # woken by the ack, long before the timeout
        released.join()
    assert [r.getMessage() for r in caplog.records] == [
        "2 answers wait for the broker; reading paused", "the broker took the answers; reading again"
    ]  # fmt: skip
