"""A state directory that turns read-only while the daemon runs (issue 27 item 8): a real tmpfs, remounted
read-only under the running Service. Every announcement still ends with an event — the one playing
finishes (it was heard), the one waiting and the one arriving get `error` naming the spool — and the log
says once what could not be written."""

from __future__ import annotations

import json
import logging
import subprocess
from types import SimpleNamespace

import pytest
from announcer_rig import GatedSink, fake_engine

from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "ro"


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


@pytest.fixture
def state(tmp_path):
    """A tmpfs of our own for the state directory (root only: CI and this machine run as root)."""
    path = tmp_path / "state"
    path.mkdir()
    mount("-t", "tmpfs", "-o", "size=16m", "tmpfs", str(path))
    yield path
    mount("-o", "remount,rw", str(path))
    subprocess.run(["umount", str(path)], check=True)


def events(recorder, ann_id) -> list[tuple[str, str]]:
    found = [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]
    return [(e["event"], e.get("reason", "")) for e in found if e.get("id") == ann_id]


def ended(recorder, ann_id) -> bool:
    return any(kind in ("finished", "error", "cancelled") for kind, _ in events(recorder, ann_id))


def test_a_state_directory_that_turns_read_only_still_ends_every_announcement_with_an_event(
    tmp_path, state, mosquitto, recorder_factory, caplog
):
    config = tmp_path / "qwen3tts.yaml"
    sections = {
        "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(state / "spool")},
        "audio": {"lead_in_ms": 0, "tail_ms": 0, "chime_normal": "none", "jitter_buffer_ms": 0},
        "thermal": {"enabled": False},
        "cache": {"enabled": False},
    }
    config.write_text(json.dumps(sections))
    runtime = SimpleNamespace(
        engine=fake_engine(),
        spec=SimpleNamespace(speakers=("ryan",), languages=("english",), size="0.6b",
                             variant="custom_voice", supports_instruct=False),
        plan=SimpleNamespace(summary=lambda: {"talker": "CPU"}, decode_paths=lambda: {"talker": "plugin"}),
        manifest=SimpleNamespace(random_weights=True),
    )  # fmt: skip
    sink = GatedSink(item="playing@0", after=2400)  # holds the audio thread inside "playing"
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    service = Service(load_settings(config), config_path=config, runtime=runtime, sink=sink)
    with caplog.at_level(logging.INFO):
        service.start()
        try:
            assert service.mqtt.client.wait_connected(30)  # subscribed: nothing published now is lost
            say = lambda ann_id: recorder.publish(  # noqa: E731
                f"qwen3tts/{SITE}/say", json.dumps({"id": ann_id, "text": "Platform notice."}), qos=1
            )
            say("playing")
            say("waiting")
            assert sink.reached.wait(90), "the first announcement never played"
            recorder.wait_for(lambda _: ("queued", "") in events(recorder, "waiting"), 10)
            mount("-o", "remount,ro", str(state))  # the disk turns read-only under the daemon
            say("arriving")
            recorder.wait_for(lambda _: ended(recorder, "arriving"), 10)
            sink.release.set()
            recorder.wait_for(lambda _: ended(recorder, "playing") and ended(recorder, "waiting"), 30)
        finally:
            sink.release.set()
            service.stop()
    assert events(recorder, "playing")[-1] == ("finished", "")  # it was heard to the end
    for ann_id in ("waiting", "arriving"):
        kind, reason = events(recorder, ann_id)[-1]
        assert kind == "error" and "spool write failed: Read-only file system" in reason, events(
            recorder, ann_id
        )
    said = [r.getMessage() for r in caplog.records if "Read-only file system" in r.getMessage()]
    spool_lines = [line for line in said if line.startswith("spool: cannot")]
    assert len(spool_lines) == 1, said  # said once, not once per write
