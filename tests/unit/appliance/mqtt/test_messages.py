"""Every typed MQTT message round-trips through topic + payload (a say through say_reader.py, which reads
it into fields, not a message), parsing rejects bad input, and the routing table (routing.py) sends each
topic we subscribe to to its message class."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil

import pytest

import qwen3tts.appliance.mqtt as mqtt_package
from qwen3tts.appliance.mqtt.controls import SetVoice, SetVolume, Stop
from qwen3tts.appliance.mqtt.duck import DuckMessage
from qwen3tts.appliance.mqtt.events import Availability, DiscoveryConfig, Event, Reply, Status, Voices
from qwen3tts.appliance.mqtt.hermes import (
    HermesError,
    HermesGetVoices,
    HermesPlayBytes,
    HermesPlayFinished,
    HermesSay,
    HermesSayFinished,
    HermesVoices,
)
from qwen3tts.appliance.mqtt.messages import (
    HomeAssistantStatus,
    Message,
    MqttMeta,
    Say,
)
from qwen3tts.appliance.mqtt.routing import COMMANDS, inbound_type, subscriptions
from qwen3tts.appliance.mqtt.say_reader import read_say, say_payload
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.appliance.mqtt.validate import read_hermes_say
from qwen3tts.appliance.priority import Priority
from qwen3tts.errors import RequestError

BASE = "qwen3tts/kitchen"

EXAMPLES: dict[type[Message], Message] = {
    Stop: Stop(scope="id", id="a1"),
    SetVolume: SetVolume(volume=0.25),
    SetVoice: SetVoice(voice="vivian"),
    HomeAssistantStatus: HomeAssistantStatus(online=True, discovery_prefix="ha"),
    Availability: Availability(online=False),
    Status: Status(
        "speaking", 3, "a1", 2, "warm", 71.5, 0.8, "ryan", {"talker": "GPU", "codec": "NPU"}, "tiny"
    ),
    Event: Event("finished", "a1", "", 10.0, 1.0, 2.0, 3.0, 9.5, correlation_data=b"\x00c"),
    Reply: Reply("replies/x", Event("queued", "a1", t_event=1.0, correlation_data=b"k")),
    Voices: Voices(("ryan", "vivian"), ("english", "german")),
    DiscoveryConfig: DiscoveryConfig("sensor", "node", "queue", {"name": "Queue"}, "ha"),
    HermesSay: HermesSay("hi", "h1", "en", 0.5, "hall", "s1"),
    HermesSayFinished: HermesSayFinished("h1", "hall", "s1"),
    HermesError: HermesError("boom", "h1", "hall", None),
    DuckMessage: DuckMessage("home/shop/duck", "duck", "shop", "a1", -20.0, 300),
    HermesPlayBytes: HermesPlayBytes("kitchen", "h1", b"RIFF....WAVE"),
    HermesPlayFinished: HermesPlayFinished("h1", "kitchen"),
    HermesGetVoices: HermesGetVoices("hermes", "v1", "kitchen"),
    HermesVoices: HermesVoices((("ryan", "preset speaker"),), "v1", "kitchen", "rhasspy"),
}


def mqtt_modules() -> list:
    """Every module of the MQTT package (client.py too: a message class may be added anywhere)."""
    names = [info.name for info in pkgutil.iter_modules(mqtt_package.__path__)]
    return [importlib.import_module(f"{mqtt_package.__name__}.{name}") for name in names]


def discovered_message_classes() -> set[type[Message]]:
    found = set()
    for module in mqtt_modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Message) and cls is not Message and cls.__module__ == module.__name__:
                found.add(cls)
    return found


def test_the_discovery_sees_the_modules_that_define_messages_and_the_routing_table():
    names = {module.__name__.rsplit(".", 1)[-1] for module in mqtt_modules()}
    assert {"messages", "events", "hermes", "routing", "topics", "intake"} <= names


def test_every_message_class_has_an_example():
    classes = discovered_message_classes()
    assert classes, "no message classes found"
    assert classes == set(EXAMPLES) | {Say}  # Say names a topic only: it has no instances


def test_say_is_no_record_only_the_topic_a_say_payload_comes_on():
    assert not dataclasses.is_dataclass(Say) and not inspect.signature(Say).parameters  # no fields
    assert Say.topic_for(BASE) == f"{BASE}/say"


@pytest.mark.parametrize("cls", sorted(EXAMPLES, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_message_round_trips_through_topic_and_payload(cls):
    message = EXAMPLES[cls]
    topic, payload = message.topic(BASE), message.payload()
    assert isinstance(payload, bytes)
    again = read_back(cls, topic, payload, message.meta())  # meta: the MQTT 5 properties sent along
    assert again == message
    assert again.topic(BASE) == topic and again.payload() == payload


def read_back(cls: type[Message], topic: str, payload: bytes, meta: MqttMeta) -> Message:
    """What the door reads from what was published: a Hermes say by the validator's reader, the rest by
    their own."""
    if cls is HermesSay:
        return read_hermes_say(payload)
    return cls.from_mqtt(topic, payload, meta)


def test_json_say_round_trips_with_every_field():
    say = dict(
        text="Gleis 3",
        id="x",
        lang="german",
        voice="ryan",
        instruct="calm",
        priority=Priority.EMERGENCY,
        volume=0.5,
        chime="none",
        repeat=3,
        repeat_interval=2.0,
        ttl=30.0,
        expires_at=2e9,
        interrupt=False,
        session_id="s",
    )
    unsaid = read_say(b'{"text": ""}')  # what a field left out reads as
    assert read_say(say_payload(say)) == {**unsaid, **say}


def test_say_reads_plain_text_json_and_the_speaker_alias():
    no_meta = {"response_topic": None, "correlation_data": None, "message_expiry": None}
    assert read_say(b"  Guten Tag \n") == {"text": "Guten Tag", **no_meta}
    assert read_say(b'{"text": "hi", "speaker": "ryan"}')["voice"] == "ryan"
    meta = MqttMeta(response_topic="r", correlation_data=b"c", message_expiry=9)
    say = read_say(b"hi", meta)
    assert (say["response_topic"], say["correlation_data"], say["message_expiry"]) == ("r", b"c", 9)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xc3\x28", "not valid UTF-8"),
        (b"{nope", "malformed JSON"),
        (b'{"text": "a", "volume": true}', "field 'volume' must be a number, got bool"),
        (b'{"text": "a", "id": 7}', "field 'id' must be a string, got int"),
        (b'{"text": "a", "repeat": "2"}', "field 'repeat' must be an integer, got str"),
        (b'{"text": "a", "interrupt": 1}', "field 'interrupt' must be a boolean, got int"),
    ],
)
def test_say_parsing_names_what_is_wrong(payload, reason):
    with pytest.raises(RequestError, match=reason):
        read_say(payload)


def test_stop_accepts_plain_scopes_and_json_and_checks_them():
    assert Stop.from_mqtt("t", b"") == Stop("current")
    assert Stop.from_mqtt("t", b"all") == Stop("all")
    assert Stop.from_mqtt("t", b'{"scope": "id", "id": "a"}') == Stop("id", "a")
    with pytest.raises(RequestError, match="needs an id"):
        Stop.from_mqtt("t", b'{"scope": "id"}')
    with pytest.raises(RequestError, match="unknown stop scope"):
        Stop.from_mqtt("t", b"everything")


def test_set_volume_accepts_numbers_in_range_only():
    assert SetVolume.from_mqtt("t", b"0.3") == SetVolume(0.3)
    assert SetVolume.from_mqtt("t", b'{"volume": 1}') == SetVolume(1.0)
    for bad in (b"1.2", b"-0.1", b"loud"):
        with pytest.raises(RequestError):
            SetVolume.from_mqtt("t", bad)


def test_every_topic_we_subscribe_to_has_its_message_class_and_nothing_else_is_routed():
    topics = Topics(base=BASE, discovery_prefix="ha", hermes=True, hermes_satellites=("porch",))
    routed = {topic: inbound_type(topics, topic) for topic, _ in subscriptions(topics)}
    assert routed == {
        f"{BASE}/say": Say,
        f"{BASE}/stop": Stop,
        f"{BASE}/volume/set": SetVolume,
        f"{BASE}/voice/set": SetVoice,
        "ha/status": HomeAssistantStatus,
        "hermes/tts/say": HermesSay,
        "rhasspy/tts/getVoices": HermesGetVoices,
        "hermes/tts/getVoices": HermesGetVoices,
        "hermes/audioServer/porch/playFinished": HermesPlayFinished,
    }
    assert inbound_type(topics, "hermes/audioServer/attic/playFinished") is None  # not our satellite
    assert set(COMMANDS) == {Say, Stop, SetVolume, SetVoice}
    for stranger in (f"{BASE}/event", f"{BASE}/status", "homeassistant/status", f"{BASE}/say/x", "#"):
        assert inbound_type(topics, stranger) is None
    assert inbound_type(Topics(BASE), "hermes/tts/say") is None


def test_subscriptions_drop_retained_commands_but_not_home_assistant_birth():
    subs = dict(subscriptions(Topics(base=BASE, hermes=True)))
    assert subs[f"{BASE}/say"] is True and subs["hermes/tts/say"] is True
    assert subs["homeassistant/status"] is False
    assert "hermes/tts/say" not in dict(subscriptions(Topics(base=BASE)))


def test_event_payload_is_json_without_the_correlation_data():
    body = json.loads(Event("queued", "a", t_event=1.0, correlation_data=b"x").payload())
    assert body == {"event": "queued", "id": "a", "reason": "", "t_event": 1.0}


def test_play_finished_takes_its_site_from_the_topic_and_refuses_bad_ids_and_other_sites():
    topic = "hermes/audioServer/porch/playFinished"
    assert HermesPlayFinished.from_mqtt(topic, b'{"id": "a1"}') == HermesPlayFinished("a1", "porch")
    for bad, match in (
        (b'{"siteId": "porch"}', "required"),
        (b'{"id": "a1", "siteId": "attic"}', "disagrees"),
        (b'{"id": "' + b"x" * 200 + b'"}', "id"),
        (b'{"id": "a/+#"}', "id"),
        (b"not json", "JSON"),
    ):
        with pytest.raises(RequestError, match=match):
            HermesPlayFinished.from_mqtt(topic, bad)


def test_get_voices_answers_in_the_namespace_it_was_asked_in():
    ask = HermesGetVoices.from_mqtt("rhasspy/tts/getVoices", b"")
    assert (ask.namespace, ask.id, ask.site_id) == ("rhasspy", None, "default")
    answer = HermesVoices((("ryan", "preset speaker"),), "v1", "porch", "hermes")
    assert answer.topic(BASE) == "hermes/tts/voices"
    assert json.loads(answer.payload()) == {
        "voices": [{"voiceId": "ryan", "description": "preset speaker"}],
        "id": "v1",
        "siteId": "porch",
    }
