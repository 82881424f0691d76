"""MQTT ducking through the whole Service: real mosquitto, the real Engine over the fake runner, a gated sink.

A zone with `ducking.mqtt_topic` sends `duck` before an announcement's first audio and `unduck` after it
(same announcement id, documented JSON payload), and the `unduck` follows a cancel, a barge-in and an
error as well; what a crash left ducked (a restore record) is unducked at the next start.
"""

from __future__ import annotations

import json

import pytest
from announcer_rig import GatedSink, RigSink, fake_runtime

from qwen3tts.appliance.zones.restore import RestoreRecord
from qwen3tts.paths import ducking_restore_dir
from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "duck"
DUCK_TOPIC = "home/hall/media/duck"
TEXT = "Store notice, part one. Store notice, part two."


def write_config(path, broker) -> None:
    sections = {
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(path.parent / "spool")},
        "audio": {
            "lead_in_ms": 0,
            "tail_ms": 0,
            "chime_normal": "none",
            "chime_emergency": "none",
            "jitter_buffer_ms": 0,
        },
        "thermal": {"enabled": False},
        "voice": {"voice": "ryan"},
        "cache": {"enabled": False},
        "zones": [
            {
                "name": "default",
                "output": "null",
                "ducking": {"mqtt_topic": DUCK_TOPIC, "level_db": -18, "ramp_in_ms": 100, "ramp_out_ms": 100},
            }
        ],
    }
    path.write_text(json.dumps(sections))


def start_service(tmp_path, broker, sink, recorder) -> Service:
    config = tmp_path / "qwen3tts.yaml"
    write_config(config, broker)
    svc = Service(load_settings(config), config_path=config, runtime=fake_runtime(("ryan",)), sink=sink)
    svc.start()
    recorder.wait_for(lambda msgs: any(m.topic.endswith("/status") for m in msgs), 10)  # subscribed
    return svc


@pytest.fixture
def recorder(mosquitto, recorder_factory):
    return recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#", DUCK_TOPIC])


def stream(recorder) -> list[tuple[str, str]]:
    """(kind, id) of every event and duck message, in the order they arrived (one publisher, QoS 1)."""
    out = []
    for message in list(recorder.messages):
        if message.topic not in (DUCK_TOPIC, f"qwen3tts/{SITE}/event"):
            continue
        body = json.loads(message.payload)
        kind = body["action"] if message.topic == DUCK_TOPIC else body["event"]
        out.append((kind, body.get("id")))
    return out


def wait_for(recorder, kind, ann_id, timeout=20.0) -> None:
    recorder.wait_for(lambda _: (kind, ann_id) in stream(recorder), timeout)


def say(recorder, ann_id, text=TEXT, **fields) -> None:
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": ann_id, "text": text, **fields}), qos=1)


def test_duck_comes_before_the_first_audio_and_unduck_after_the_announcement(tmp_path, mosquitto, recorder):
    svc = start_service(tmp_path, mosquitto, RigSink(), recorder)
    try:
        say(recorder, "a1")
        wait_for(recorder, "finished", "a1")
        wait_for(recorder, "unduck", "a1")
    finally:
        svc.stop()
    seen = stream(recorder)
    assert seen.index(("duck", "a1")) < seen.index(("first_audio", "a1"))
    assert seen.index(("duck", "a1")) < seen.index(("unduck", "a1"))
    duck, unduck = [json.loads(m.payload) for m in recorder.on(DUCK_TOPIC)]
    assert duck == {"action": "duck", "zone": "default", "id": "a1", "level_db": -18.0, "ramp_ms": 100}
    assert unduck == {"action": "unduck", "zone": "default", "id": "a1", "level_db": 0.0, "ramp_ms": 100}
    assert not RestoreRecord(ducking_restore_dir(), "default.duck-mqtt").pending()


def held_at(sink: GatedSink, recorder, ann_id: str) -> None:
    assert sink.reached.wait(20), "the announcement never reached the gate"
    wait_for(recorder, "duck", ann_id)


def test_unduck_follows_a_cancel(tmp_path, mosquitto, recorder):
    sink = GatedSink(item="c1@0", after=2400)
    svc = start_service(tmp_path, mosquitto, sink, recorder)
    try:
        say(recorder, "c1")
        held_at(sink, recorder, "c1")
        assert ("unduck", "c1") not in stream(recorder)  # still ducked while it plays
        recorder.publish(f"qwen3tts/{SITE}/stop", json.dumps({"scope": "current"}), qos=1)
        wait_for(recorder, "stopped", None)  # taken while the sink holds c1 (released before, c1 could end)
        sink.release.set()
        wait_for(recorder, "cancelled", "c1")
        wait_for(recorder, "unduck", "c1")
    finally:
        sink.release.set()
        svc.stop()
    assert ("finished", "c1") not in stream(recorder)


def test_unduck_follows_a_barge_in_and_the_emergency_is_ducked_too(tmp_path, mosquitto, recorder):
    sink = GatedSink(item="n1@0", after=2400)
    svc = start_service(tmp_path, mosquitto, sink, recorder)
    try:
        say(recorder, "n1")
        held_at(sink, recorder, "n1")
        say(recorder, "e1", "Fire alarm.", priority="emergency")
        sink.release.set()
        wait_for(recorder, "finished", "e1")
        wait_for(recorder, "unduck", "e1")
    finally:
        sink.release.set()
        svc.stop()
    ducks = [(kind, i) for kind, i in stream(recorder) if kind in ("duck", "unduck")]
    # the cut play is unducked before the emergency ducks; then the emergency's own pair
    assert ducks[:4] == [("duck", "n1"), ("unduck", "n1"), ("duck", "e1"), ("unduck", "e1")]
    assert [kind for kind, _ in ducks] == ["duck", "unduck"] * (len(ducks) // 2)  # never ducked twice


def test_unduck_follows_an_error_while_playing(tmp_path, mosquitto, recorder):
    svc = start_service(tmp_path, mosquitto, RigSink(), recorder)
    playback = svc.playbacks["default"]
    original = playback._play_to_sink

    def failing(track):
        if track.label == "bad":
            raise RuntimeError("injected into the audio thread")
        return original(track)

    playback._play_to_sink = failing
    try:
        say(recorder, "bad")
        wait_for(recorder, "error", "bad")
        wait_for(recorder, "unduck", "bad")
        say(recorder, "good")
        wait_for(recorder, "unduck", "good")
    finally:
        svc.stop()
    seen = stream(recorder)
    assert seen.index(("duck", "bad")) < seen.index(("unduck", "bad")) < seen.index(("duck", "good"))


def test_what_a_crash_left_ducked_is_unducked_at_the_next_start(tmp_path, mosquitto, recorder):
    RestoreRecord(ducking_restore_dir(), "default.duck-mqtt").remember({"lost-1": "duck"})
    svc = start_service(tmp_path, mosquitto, RigSink(), recorder)
    try:
        wait_for(recorder, "unduck", "lost-1")
    finally:
        svc.stop()
    assert not RestoreRecord(ducking_restore_dir(), "default.duck-mqtt").pending()
