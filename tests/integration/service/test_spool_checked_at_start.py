"""The spool is input too, through the whole daemon (issue 37 item 3): a Service started over a spool with
entries the MQTT door would refuse (a 100,000-character text, `not_before: 1e300`, wrong types, a huge
file) publishes one `error` event for each on the event topic, with the reason, quarantines them, and plays
the valid one."""

from __future__ import annotations

import json

from announcer_rig import RigSink, fake_runtime, start_subscribed

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.spool import MAX_FILE_BYTES, Spool, quarantined
from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "spoolcheck"


def entry(seq: int, **fields) -> bytes:
    announcement = {**Announcement(id=f"bad-{seq}", text="Bad.", seq=seq).to_json(), **fields}
    return json.dumps({"version": 1, "announcement": announcement}).encode()


BAD = {
    2: (entry(2, text="x" * 100_000), "bad-2", "payload too large"),
    3: (entry(3, not_before=1e300), "bad-3", "not_before is 1e+300 s ahead"),
    4: (entry(4, repeat="twice", volume=[1]), "bad-4", "unreadable spool file 000000000004.json"),
    5: (entry(5, text="y" * (MAX_FILE_BYTES + 1)), None, "larger than 1048576 bytes"),  # no id to name
}


def test_a_daemon_started_over_hostile_spool_entries_reports_each_once_and_plays_the_valid_one(
    tmp_path, mosquitto, recorder_factory
):
    spool_dir = tmp_path / "spool"
    Spool(spool_dir).write(Announcement(id="good", text="Platform four.", seq=1))
    for seq, (content, _, _) in BAD.items():
        (spool_dir / f"{seq:012d}.json").write_bytes(content)
    config = tmp_path / "qwen3tts.yaml"
    config.write_text(json.dumps({
        "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(spool_dir)},
        "audio": {"lead_in_ms": 0, "tail_ms": 0, "chime_normal": "none", "jitter_buffer_ms": 0},
        "thermal": {"enabled": False}, "cache": {"enabled": False},
    }))  # fmt: skip
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/event"])
    service = Service(load_settings(config), config_path=config, runtime=fake_runtime(), sink=RigSink())

    def said() -> list[tuple[str, str, str]]:
        found = [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]
        return [(e.get("id"), e["event"], e.get("reason", "")) for e in found]

    start_subscribed(service)
    try:
        recorder.wait_for(lambda _: ("good", "finished", "") in said(), 60)
        recorder.wait_for(lambda _: len([e for e in said() if e[1] == "error"]) >= len(BAD), 30)
    finally:
        service.stop()
    errors = [e for e in said() if e[1] == "error"]
    assert len(errors) == len(BAD), said()
    for _, ann_id, reason in BAD.values():
        [(_, _, why)] = [e for e in errors if e[0] == ann_id and reason in e[2]]
        assert why.startswith("quarantined: "), why
    assert [e[1] for e in said() if e[0] == "good"] == ["started", "first_audio", "finished"]
    assert len(quarantined(spool_dir)) == len(BAD) and list(spool_dir.glob("*.json")) == []
