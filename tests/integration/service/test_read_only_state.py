"""A state directory that turns read-only or full while the daemon runs (issue 27 item 8, issue 37 item 2):
a real tmpfs, remounted read-only (or filled up) under the running Service. Every announcement still ends
with an event — the one playing finishes (it was heard), the one waiting and the one arriving get `error`
naming the spool — and the log says once what could not be written. Then the disk heals, the daemon stops
in order and starts again: nothing it answered is replayed (exactly one terminal event each)."""

from __future__ import annotations

import errno
import json
import logging
import subprocess
import threading

import pytest
from announcer_rig import GatedSink, fake_runtime

from qwen3tts.appliance.audio.sinks import WavSink
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


def fill(state) -> None:
    """Take every free block of the tmpfs (a file the heal deletes)."""
    with open(state / "filler", "wb") as filler:
        try:
            while True:
                filler.write(b"\0" * (1 << 20))
                filler.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc


def configure(tmp_path, state, mosquitto):
    config = tmp_path / "qwen3tts.yaml"
    sections = {
        "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(state / "spool")},
        "audio": {"lead_in_ms": 0, "tail_ms": 0, "chime_normal": "none", "jitter_buffer_ms": 0},
        "thermal": {"enabled": False},
        "cache": {"enabled": False},
    }
    config.write_text(json.dumps(sections))
    return config


FAULTS = {
    "read-only": (lambda state: mount("-o", "remount,ro", str(state)),
                  lambda state: mount("-o", "remount,rw", str(state)), "Read-only file system"),
    "full": (fill, lambda state: (state / "filler").unlink(), "No space left on device"),
}  # fmt: skip


@pytest.mark.parametrize("fault", FAULTS, ids=FAULTS.keys())
def test_a_state_directory_that_turns_read_only_or_full_ends_every_announcement_once_across_a_restart(
    tmp_path, state, mosquitto, recorder_factory, caplog, fault
):
    break_disk, heal, trouble = FAULTS[fault]
    config = configure(tmp_path, state, mosquitto)
    sink = GatedSink(item="playing@0", after=2400)  # holds the audio thread inside "playing"
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    service = Service(load_settings(config), config_path=config, runtime=fake_runtime(("ryan",)), sink=sink)
    with caplog.at_level(logging.INFO):
        service.start()
        try:
            assert service.mqtt.client.wait_connected(30)  # subscribed: nothing published now is lost
            say(recorder, "playing")
            say(recorder, "waiting")
            assert sink.reached.wait(90), "the first announcement never played"
            recorder.wait_for(lambda _: ("queued", "") in events(recorder, "waiting"), 10)
            break_disk(state)  # the disk turns read-only (or fills up) under the daemon
            say(recorder, "arriving")
            recorder.wait_for(lambda _: ended(recorder, "arriving"), 10)
            sink.release.set()
            recorder.wait_for(lambda _: ended(recorder, "playing") and ended(recorder, "waiting"), 30)
            heal(state)  # before the orderly stop, whose last act retries what could not be removed
        finally:
            sink.release.set()
            service.stop()
    assert events(recorder, "playing")[-1] == ("finished", "")  # it was heard to the end
    kind, reason = events(recorder, "arriving")[-1]
    assert kind == "error" and f"spool write failed: {trouble}" in reason, events(recorder, "arriving")
    kind, reason = events(recorder, "waiting")[-1]
    if fault == "full" and kind == "finished":
        pass  # the finished one's file was removed first, and that freed the room its attempt needed
    else:
        assert kind == "error" and f"spool write failed: {trouble}" in reason, events(recorder, "waiting")
    said = [r.getMessage() for r in caplog.records if trouble in r.getMessage()]
    spool_lines = [line for line in said if line.startswith("spool: cannot")]
    assert len(spool_lines) == 1, said  # said once, not once per write
    assert sorted(p.name for p in (state / "spool").glob("*.json")) == []  # what ended is gone
    again = Service(
        load_settings(config), config_path=config, runtime=fake_runtime(("ryan",)), sink=GatedSink()
    )
    again.start()  # the restart replays the spool before it returns
    try:
        assert again.announcer.queue.ids() == [] and again.announcer.queue.quarantined == []
    finally:
        again.stop()
    for ann_id in ("playing", "waiting", "arriving"):
        ends = [kind for kind, _ in events(recorder, ann_id) if kind in ("finished", "error", "cancelled")]
        assert len(ends) == 1, events(recorder, ann_id)


class GatedWavSink(WavSink):
    """The WAV sink (one file per play), holding the audio thread inside `write()` once the play of
    `item` has had `after` samples: `reached` is set, and the write returns when the test sets `release`."""

    def __init__(self, directory, item: str = "", after: int = 0) -> None:
        super().__init__(directory)
        self.item, self.after, self.playing, self.written = item, after, "", 0
        self.reached, self.release = threading.Event(), threading.Event()

    def begin(self, item_id: str) -> None:
        super().begin(item_id)
        self.playing, self.written = item_id, 0

    def write(self, block) -> bool:
        underflow = super().write(block)
        self.written += len(block)
        if self.playing == self.item and self.written >= self.after and not self.reached.is_set():
            self.reached.set()
            assert self.release.wait(60), "the test never released the audio thread"
        return underflow


def start_again(tmp_path, config, life: int, caplog) -> None:
    """A new daemon over the same state and runtime directory: it starts (replaying the spool before
    `start()` returns), replays nothing, and stops in order."""
    caplog.clear()
    again = Service(load_settings(config), config_path=config, runtime=fake_runtime(("ryan",)),
                    sink=GatedWavSink(tmp_path / "wav" / f"{life}"))  # fmt: skip
    again.start()
    try:
        assert again.announcer.queue.ids() == [] and again.announcer.queue.quarantined == []
        assert not [r for r in caplog.records if r.getMessage().startswith("replayed ")]
    finally:
        again.stop()


def test_a_restart_while_the_state_directory_is_still_read_only_replays_nothing_that_ended(
    tmp_path, state, mosquitto, recorder_factory, caplog, monkeypatch
):
    # The ledger of ended spool files goes to the runtime directory: another filesystem than the state's.
    monkeypatch.setenv("RUNTIME_DIRECTORY", str(tmp_path / "run"))
    config = configure(tmp_path, state, mosquitto)
    sink = GatedWavSink(tmp_path / "wav" / "0", item="playing", after=2400)
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    service = Service(load_settings(config), config_path=config, runtime=fake_runtime(("ryan",)), sink=sink)
    with caplog.at_level(logging.INFO):
        service.start()
        try:
            assert service.mqtt.client.wait_connected(30)
            say(recorder, "playing")
            say(recorder, "waiting")
            assert sink.reached.wait(90), "the first announcement never played"
            recorder.wait_for(lambda _: ("queued", "") in events(recorder, "waiting"), 10)
            mount("-o", "remount,ro", str(state))
            sink.release.set()
            recorder.wait_for(lambda _: ended(recorder, "playing") and ended(recorder, "waiting"), 30)
        finally:
            sink.release.set()
            service.stop()  # on the read-only disk still: its last retry of the removals fails too
        assert sorted(p.name for p in (state / "spool").glob("*.json")), "nothing was left to replay"
        start_again(tmp_path, config, 1, caplog)  # the disk is still read-only
        mount("-o", "remount,rw", str(state))
        start_again(tmp_path, config, 2, caplog)  # healed: the removals are done at last
    assert sorted(p.name for p in (state / "spool").glob("*.json")) == []
    assert [p.name for p in (tmp_path / "run").glob("ended-spool-files-*.json")] != []
    for ledger in (tmp_path / "run").glob("ended-spool-files-*.json"):
        assert json.loads(ledger.read_text())["ended"] == {}
    for ann_id in ("playing", "waiting"):
        ends = [kind for kind, _ in events(recorder, ann_id) if kind in ("finished", "error", "cancelled")]
        assert len(ends) == 1, events(recorder, ann_id)
    assert len(list((tmp_path / "wav").glob("*/*-playing.wav"))) == 1  # heard once, across all three lives


def say(recorder, ann_id: str) -> None:
    """One announcement over MQTT, QoS 1, as a publisher sends it."""
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": ann_id, "text": "Platform notice."}), qos=1)
