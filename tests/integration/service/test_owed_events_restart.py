"""The ends of spooled announcements kept until the broker has them (service/owed_events.py), across an
orderly stop and start of the real Service on a real mosquitto: what was acknowledged before the stop is
paid and not sent again (a restart must not repeat the last `finished`); what the process never sent is
sent at the start, the same bytes, once."""

from __future__ import annotations

import base64
import json

from announcer_rig import GatedSink, fake_runtime

from qwen3tts.service.owed_events import FILE_NAME, OwedEvents
from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "owed"


def configure(tmp_path, mosquitto):
    config = tmp_path / "qwen3tts.yaml"
    config.write_text(json.dumps({
        "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"lead_in_ms": 0, "tail_ms": 0, "chime_normal": "none", "jitter_buffer_ms": 0},
        "thermal": {"enabled": False}, "cache": {"enabled": False},
    }))  # fmt: skip
    return config


def service(config) -> Service:
    return Service(
        load_settings(config), config_path=config, runtime=fake_runtime(("ryan",)), sink=GatedSink()
    )


def finished(recorder, ann_id) -> list[bytes]:
    out = []
    for m in recorder.on(f"qwen3tts/{SITE}/event"):
        event = json.loads(m.payload)
        if event.get("id") == ann_id and event["event"] == "finished":
            out.append(m.payload)
    return out


def test_an_end_acknowledged_before_an_orderly_stop_is_not_sent_again_at_the_start(
    tmp_path, mosquitto, recorder_factory
):
    config = configure(tmp_path, mosquitto)
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/event"])
    first = service(config)
    first.start()
    try:
        assert first.mqtt.client.wait_connected(30)
        recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": "o1", "text": "Platform two."}))
        recorder.wait_for(lambda _: finished(recorder, "o1"), 60)
    finally:
        first.stop()  # at once: the status thread's next second never comes
    assert OwedEvents(tmp_path / "spool").ids() == set()
    again = service(config)
    again.start()
    try:
        assert again.mqtt.client.wait_connected(30)
        recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": "o2", "text": "Platform three."}))
        recorder.wait_for(lambda _: finished(recorder, "o2"), 60)  # anything resent came before it
    finally:
        again.stop()
    assert len(finished(recorder, "o1")) == 1


def test_an_end_the_last_process_never_sent_goes_out_at_the_start(tmp_path, mosquitto, recorder_factory):
    config = configure(tmp_path, mosquitto)
    payload = json.dumps({"event": "finished", "id": "o3", "reason": "", "t_event": 1.5}).encode()
    line = {"owe": "o3", "messages": [{"topic": f"qwen3tts/{SITE}/event", "retain": False,
                                       "payload": base64.b64encode(payload).decode()}]}  # fmt: skip
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / FILE_NAME).write_text(json.dumps(line) + "\n")
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/event"])
    again = service(config)
    again.start()
    try:
        recorder.wait_for(lambda _: finished(recorder, "o3"), 30)
        assert again.mqtt.client.wait_connected(30)
    finally:
        again.stop()
    assert finished(recorder, "o3") == [payload]
    assert OwedEvents(tmp_path / "spool").ids() == set()  # paid once the broker had it
