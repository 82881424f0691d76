"""The rescue of a dead pool member's session (appliance/mqtt/pool_rescue.py) against a real mosquitto
on loopback: what waits in the session is handed over and acknowledged, then the session ends; a session
that is not there is "empty"; no rescue starts while we are not in the round robin ourselves; the owner
coming back interrupts it and gets back what we had not acknowledged. Every wait is for an event the
code or the broker signals (on_end, a delivered message), bounded only to fail a hung test."""

import queue
import threading
import time

import paho.mqtt.client as paho
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from qwen3tts.appliance.mqtt.pool import MemberRecord, PoolTopics
from qwen3tts.appliance.mqtt.pool_rescue import Rescue
from qwen3tts.settings import MqttSettings

TOPICS = PoolTopics(group="hall", base="qwen3tts/pool/hall")
OWNER_ID = "gate-pool"
RECORD = MemberRecord("gate", OWNER_ID, "offline")
BOUND_S = 30  # bounds a failure only


class Owner:
    """The member whose pool session is rescued: a persistent MQTT 5 session in the shared subscription."""

    def __init__(self, broker, *, manual_ack: bool = False) -> None:
        self.messages: queue.Queue = queue.Queue()
        self.session_present: queue.Queue = queue.Queue()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=OWNER_ID, protocol=paho.MQTTv5,
                                  manual_ack=manual_ack)  # fmt: skip
        self.client.on_connect = lambda _c, _u, flags, _rc, _p: self.session_present.put(
            flags.session_present
        )
        self.client.on_message = lambda _c, _u, msg: self.messages.put(msg)
        self.broker = broker

    def connect(self, *, clean_start: bool) -> bool:
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 600
        self.client.connect(self.broker.host, self.broker.port, clean_start=clean_start, properties=props)
        self.client.loop_start()
        return self.session_present.get(timeout=BOUND_S)

    def join_and_die(self) -> None:
        """Join the round robin, then go away keeping the session (a box that lost power, in effect)."""
        subscribed = threading.Event()
        self.client.on_subscribe = lambda *_a: subscribed.set()
        self.connect(clean_start=True)
        self.client.subscribe(TOPICS.shared, qos=1)
        assert subscribed.wait(BOUND_S)
        self.client.disconnect()
        self.client.loop_stop()


def settings_for(broker) -> MqttSettings:
    return MqttSettings(host=broker.host, port=broker.port)


def rescue(broker, on_inbound, before=lambda _timeout: True) -> tuple[Rescue, queue.Queue]:
    ended: queue.Queue = queue.Queue()
    r = Rescue(settings_for(broker), TOPICS, RECORD, on_inbound=on_inbound,
               on_end=lambda record, outcome, taken: ended.put((record, outcome, taken)),
               before=before, password=None)  # fmt: skip
    return r, ended


@pytest.fixture
def waiting(mosquitto, recorder_factory):
    """Two announcements pinned to the dead owner's session."""
    Owner(mosquitto).join_and_die()
    publisher = recorder_factory(mosquitto, [])
    publisher.publish(TOPICS.say, b'{"text": "first"}')
    publisher.publish(TOPICS.say, b'{"text": "second"}')
    return mosquitto


def test_what_waits_in_a_dead_members_session_is_taken_over_and_the_session_ended(waiting):
    taken = []

    def on_inbound(inbound, r):
        taken.append(inbound)
        if inbound.dup:
            r.took(f"dup:{inbound.payload.decode()}")
        inbound.ack()

    r, ended = rescue(waiting, on_inbound)
    r.start()
    record, outcome, noted = ended.get(timeout=BOUND_S)
    assert (record, outcome, noted) == (RECORD, "rescued", ())  # nothing was redelivered: none noted
    assert r.outcome == "rescued"
    assert [i.payload for i in taken] == [b'{"text": "first"}', b'{"text": "second"}']
    assert all(i.topic == TOPICS.say and i.message_id > 2 * (1 << 16) for i in taken)  # rescued numbering
    owner = Owner(waiting)
    assert owner.connect(clean_start=False) is False  # the rescue ended the session
    owner.client.disconnect()
    owner.client.loop_stop()


def test_a_member_without_a_session_on_the_broker_is_an_empty_rescue(mosquitto):
    r, ended = rescue(mosquitto, on_inbound=lambda *_a: pytest.fail("nothing should arrive"))
    r.start()
    assert ended.get(timeout=BOUND_S) == (RECORD, "empty", ())


def test_no_rescue_starts_while_we_are_not_in_the_round_robin_ourselves(waiting):
    asked = []

    def before(timeout):
        asked.append(timeout)
        return False

    r, ended = rescue(waiting, on_inbound=lambda *_a: pytest.fail("nothing should arrive"), before=before)
    r.start()
    assert ended.get(timeout=BOUND_S) == (RECORD, "interrupted", ())
    assert asked == [10.0] and r.outcome == "interrupted"
    owner = Owner(waiting)  # the session and what waits in it are still the owner's
    assert owner.connect(clean_start=False) is True
    got = {owner.messages.get(timeout=BOUND_S).payload for _ in range(2)}
    assert got == {b'{"text": "first"}', b'{"text": "second"}'}
    owner.client.disconnect()
    owner.client.loop_stop()


def test_the_owner_coming_back_interrupts_the_rescue_and_gets_what_was_not_acknowledged(waiting):
    first_held, taken = threading.Event(), []

    def on_inbound(inbound, r):
        taken.append(inbound.payload)
        first_held.set()  # never acknowledged: the box is still busy with it when the owner returns

    r, ended = rescue(waiting, on_inbound)
    r.start()
    assert first_held.wait(BOUND_S)
    owner = Owner(waiting)
    assert owner.connect(clean_start=False) is True  # the broker hands the session back to its owner
    record, outcome, _ = ended.get(timeout=BOUND_S)
    assert (record, outcome) == (RECORD, "interrupted")
    redelivered = owner.messages.get(timeout=BOUND_S)
    assert redelivered.payload == taken[0]
    owner.client.disconnect()
    owner.client.loop_stop()


def test_a_session_holding_more_than_receive_maximum_is_taken_over_whole_after_a_slow_handover(
    mosquitto, recorder_factory
):
    """30 wait where 20 can be in flight: the broker sends the other 10 only as the first are
    acknowledged, and here those acknowledgements come after a stall (a box busy spooling): the rescue
    ends the session only after its drain marker, which comes after them. (Ended after a quiet second
    instead, it lost the 10 every time: the session went with them.)"""
    Owner(mosquitto).join_and_die()
    publisher = recorder_factory(mosquitto, [])
    for n in range(30):
        publisher.publish(TOPICS.say, f'{{"text": "notice {n}"}}'.encode())
    taken, arrived = [], threading.Event()

    def on_inbound(inbound, r):
        taken.append(inbound)
        if len(taken) == 20:
            arrived.set()
        elif len(taken) > 20:
            inbound.ack()  # the rest at once

    r, ended = rescue(mosquitto, on_inbound)
    r.start()
    assert arrived.wait(BOUND_S)
    time.sleep(1.5)  # the stall: longer than RESCUE_QUIET_S since the last message came
    for inbound in taken[:20]:
        inbound.ack()
    assert ended.get(timeout=BOUND_S)[1] == "rescued"
    assert sorted(i.payload for i in taken) == sorted(f'{{"text": "notice {n}"}}'.encode() for n in range(30))
