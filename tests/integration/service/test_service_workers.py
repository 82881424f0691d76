"""The whole Service in process: real mosquitto, the real Engine over the fake runner, a recording sink.

Supervision (an exception while a worker handles one item fails only that item, with an `error` event,
and the next announcement still finishes; an exception outside any item restarts the worker) and SIGHUP
(volume and voice set over MQTT survive a reload unless the file changed them; the queue is kept).
"""

from __future__ import annotations

import json

import pytest
from announcer_rig import RigSink, fake_runtime, start_subscribed

from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "svc"
TEXT = "Store notice, part one. Store notice, part two."


def write_config(path, broker, **audio) -> None:
    sections = {
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(path.parent / "spool")},
        "audio": {"lead_in_ms": 0, "tail_ms": 0, "chime_normal": "none", "jitter_buffer_ms": 0, **audio},
        "thermal": {"enabled": False},
        "voice": {"voice": "ryan"},
        "cache": {"enabled": False},  # every say is synthesised: these tests fail synthesis on purpose
    }
    path.write_text(json.dumps(sections))


@pytest.fixture
def service(tmp_path, mosquitto):
    config = tmp_path / "qwen3tts.yaml"
    write_config(config, mosquitto)
    svc = Service(load_settings(config), config_path=config, runtime=fake_runtime(), sink=RigSink())
    start_subscribed(svc)
    yield svc
    svc.stop()


@pytest.fixture
def recorder(mosquitto, recorder_factory):
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    recorder.wait_for(lambda msgs: any(m.topic.endswith("/status") for m in msgs), 10)
    return recorder


def events(recorder, ann_id) -> list[dict]:
    found = [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]
    return [e for e in found if e.get("id") == ann_id]


def wait_event(recorder, ann_id, kind, timeout=20.0) -> dict:
    recorder.wait_for(lambda _: any(e["event"] == kind for e in events(recorder, ann_id)), timeout)
    return next(e for e in events(recorder, ann_id) if e["event"] == kind)


def say(recorder, ann_id, text=TEXT) -> None:
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": ann_id, "text": text}), qos=1)


def fail_once(obj, name: str, when=lambda *args: True):
    original = getattr(obj, name)
    calls = []

    def failing(*args, **kwargs):
        if not calls and when(*args):
            calls.append(args)
            raise RuntimeError(f"injected into {name}")
        return original(*args, **kwargs)

    setattr(obj, name, failing)
    return calls


def inject(service: Service, worker: str):
    """Make `worker` raise once while it handles the announcement `victim` (or the next message)."""
    if worker == "announcer":
        return fail_once(service.announcer.lookahead, "move_pcm", lambda ann: ann.id == "victim")
    if worker == "audio":
        return fail_once(service.playback, "_play_to_sink", lambda track: track.label == "victim")
    if worker == "intake":
        return fail_once(service.mqtt.intake, "_handle")
    return fail_once(service, "_publish_status")


ITEM_FAILURE = {  # what the log says when the worker's item failed: the item, not a restart
    "announcer": "victim: moving its audio failed",
    "audio": "playing victim failed",
    "intake": "message on 'qwen3tts/svc/say' failed",
}


@pytest.mark.parametrize("worker", ["announcer", "audio", "intake"])
def test_an_exception_while_handling_one_item_fails_that_item_only_and_the_worker_goes_on(
    service, recorder, worker, caplog
):
    calls = inject(service, worker)
    say(recorder, "victim")
    if worker in ("announcer", "audio"):
        error = wait_event(recorder, "victim", "error")
        assert "RuntimeError: injected" in error["reason"]
        assert "finished" not in [e["event"] for e in events(recorder, "victim")]
    else:  # the message that failed is answered with an error event and acknowledged
        recorder.wait_for(lambda _: any(e["event"] == "error" for e in _all_events(recorder)), 10)
    say(recorder, "next")
    wait_event(recorder, "next", "finished")
    assert calls, "the injected failure never happened"
    assert any(ITEM_FAILURE[worker] in r.getMessage() and r.exc_info for r in caplog.records)
    assert not any(w.failures for w in service.supervisor.workers)  # nothing had to restart
    assert service.exit_code == 0


def test_an_exception_outside_any_item_restarts_the_worker(service, recorder, caplog):
    calls = inject(service, "status")
    say(recorder, "next")
    wait_event(recorder, "next", "finished")
    assert calls and any("worker status failed" in r.getMessage() and r.exc_info for r in caplog.records)
    assert service.exit_code == 0


def _all_events(recorder) -> list[dict]:
    return [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]


def _answered(recorder, kind: str) -> bool:
    return any(e["event"] == kind for e in _all_events(recorder))


def test_sighup_keeps_volume_and_voice_set_over_mqtt_unless_the_file_changed_them(
    service, recorder, mosquitto, tmp_path
):
    config = tmp_path / "qwen3tts.yaml"
    recorder.publish(f"qwen3tts/{SITE}/volume/set", "0.3", qos=1)
    recorder.publish(f"qwen3tts/{SITE}/voice/set", "vivian", qos=1)
    recorder.wait_for(lambda _: _answered(recorder, "volume_set") and _answered(recorder, "voice_set"), 10)
    announcer = service.announcer
    assert (announcer.volume, announcer.lookahead.defaults.voice) == (0.3, "vivian")
    say(recorder, "queued-before")
    write_config(config, mosquitto, tail_ms=50)  # the file changes neither volume nor voice
    service.reload()  # returns once the announcer has taken the new settings
    assert (announcer.volume, announcer.lookahead.defaults.voice) == (0.3, "vivian")

    write_config(config, mosquitto, tail_ms=50, volume=0.8)  # now the file changes the volume
    service.reload()
    assert (announcer.volume, announcer.lookahead.defaults.voice) == (0.8, "vivian")
    wait_event(recorder, "queued-before", "finished")  # the queue survived both reloads


@pytest.mark.parametrize(
    ("hostile", "properties"),
    [
        ('{"text": "Lone surrogate.", "id": "\\ud800"}', {}),
        ('{"text": "Wildcard reply.", "id": "wild"}', {"ResponseTopic": "qwen3tts/x/#"}),
    ],
)
def test_a_say_whose_events_cannot_be_published_silences_nothing(service, recorder, hostile, properties):
    recorder.publish(f"qwen3tts/{SITE}/say", hostile, qos=1, **properties)
    say(recorder, "after")
    wait_event(recorder, "after", "finished")
    assert service.exit_code == 0
    assert not any(w.failures for w in service.supervisor.workers)  # no worker had to restart


def test_stop_before_start_completed_still_stops(tmp_path, mosquitto):
    config = tmp_path / "qwen3tts.yaml"
    write_config(config, mosquitto)
    svc = Service(load_settings(config), config_path=config, runtime=None, sink=RigSink())
    svc.stop()  # SIGTERM while the bundle still compiles
    assert svc.wait(1)


def test_a_reload_says_reloading_with_the_monotonic_time_and_ready_when_it_is_done(
    tmp_path, mosquitto, monkeypatch
):
    """`systemctl reload` waits for READY=1 after RELOADING=1 (Type=notify-reload semantics)."""
    import socket
    import time as clock

    from qwen3tts.appliance.systemd.notify import Notifier

    path = str(tmp_path / "notify.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(path)
    server.settimeout(10)
    monkeypatch.setenv("NOTIFY_SOCKET", path)  # sdnotify reads the address from the environment
    config = tmp_path / "qwen3tts.yaml"
    write_config(config, mosquitto)
    svc = Service(load_settings(config), Notifier(), config, runtime=fake_runtime(("ryan",)), sink=RigSink())
    try:
        svc.start()
        while not server.recv(4096).decode().startswith("READY=1"):
            pass
        before = clock.clock_gettime_ns(clock.CLOCK_MONOTONIC) // 1000
        svc.reload()
        datagrams = []
        while not (datagrams and datagrams[-1].startswith("READY=1")):
            datagrams.append(server.recv(4096).decode())
    finally:
        svc.stop()
        server.close()
    reloading = next(d for d in datagrams if d.startswith("RELOADING=1"))
    fields = dict(line.split("=", 1) for line in reloading.splitlines())
    assert before <= int(fields["MONOTONIC_USEC"]) <= clock.clock_gettime_ns(clock.CLOCK_MONOTONIC) // 1000
    assert datagrams.index(reloading) < len(datagrams) - 1  # READY=1 comes after it


def test_every_long_lived_thread_of_the_daemon_runs_under_its_supervisor(tmp_path, mosquitto, monkeypatch):
    """The engine loop, paho's network loop, the thermal monitor and the watchdog are supervised workers
    (an exception restarts them like any other), and they end with the daemon."""
    import threading

    from fake_sysfs import laptop
    from notify_socket import notify_socket

    from qwen3tts.appliance.systemd.notify import Notifier

    laptop(tmp_path / "sys")
    config = tmp_path / "qwen3tts.yaml"
    write_config(config, mosquitto)
    sections = json.loads(config.read_text())
    sections["thermal"] = {"enabled": True, "sysfs_root": str(tmp_path / "sys")}
    config.write_text(json.dumps(sections))
    with notify_socket(tmp_path) as server:
        monkeypatch.setenv("NOTIFY_SOCKET", server.getsockname())
        monkeypatch.setenv("WATCHDOG_USEC", "2000000")
        monkeypatch.setenv("WATCHDOG_PID", str(__import__("os").getpid()))
        before = set(threading.enumerate())
        svc = Service(load_settings(config), Notifier(), config, runtime=fake_runtime(), sink=RigSink())
        try:
            start_subscribed(svc)
            supervised = {w.thread for w in svc.supervisor.workers}
            names = {w.name for w in svc.supervisor.workers}
            assert {"engine", "mqtt", "thermal", "watchdog", "announcer", "intake", "status"} <= names
            unsupervised = {t.name for t in set(threading.enumerate()) - before - supervised}
        finally:
            svc.stop()
        # what may run beside the workers: paho's own threads none (loop_forever runs in the worker),
        # the text guard's pool handler threads (multiprocessing), the HTTP servers' loop when enabled
        assert not {
            n
            for n in unsupervised
            if n.startswith(("qwen3tts-engine", "qwen3tts-thermal", "watchdog", "mqtt"))
        }
        assert not any(w.thread.is_alive() for w in svc.supervisor.workers)
