"""A member's pool link (appliance/mqtt/pool_link.py) reads its messages by topic: a say on the pool's
topic goes to the pool's intake, a record to the members' view, and anything else its session holds
(a rescue's drain marker, left by a rescue our return interrupted: pool_rescue.py) is acknowledged and
dropped, never read as a say. Driven through paho's message callback, as paho's thread calls it."""

import paho.mqtt.client as paho

from qwen3tts.appliance.mqtt.pool import MemberRecord, PoolTopics
from qwen3tts.appliance.mqtt.pool_link import PoolLink
from qwen3tts.settings import MqttSettings

TOPICS = PoolTopics(group="hall", base="qwen3tts/pool/hall")


class Client:
    def __init__(self) -> None:
        self.acked: list[int] = []

    def ack(self, mid: int, qos: int) -> None:
        self.acked.append(mid)


def delivered(topic: str, payload: bytes, mid: int) -> paho.MQTTMessage:
    msg = paho.MQTTMessage(mid, topic.encode())
    msg.payload, msg.qos = payload, 1
    return msg


def test_only_the_pools_say_topic_reaches_the_intake_and_a_drain_marker_is_acknowledged_and_dropped():
    inbound, records = [], []
    link = PoolLink(MqttSettings(), TOPICS, "gate", client_id="gate-pool", on_inbound=inbound.append,
                    on_record=lambda site, record: records.append((site, record)))  # fmt: skip
    client = Client()
    link._on_message(client, None, delivered(TOPICS.drain("gate"), b"0123abcd", 5))
    link._on_message(client, None, delivered(TOPICS.say, b'{"text": "Platform two."}', 6))
    record = MemberRecord("hall-b", "hall-b-pool", "member")
    link._on_message(client, None, delivered(TOPICS.member("hall-b"), record.payload(), 7))
    assert [i.payload for i in inbound] == [b'{"text": "Platform two."}']
    assert records == [("hall-b", record)]
    assert 5 in client.acked and 7 in client.acked  # the say is acknowledged once spooled, not here
