"""The broker behind a lossy, slow link (tests/support/lossy_link.py): QoS 1 delivers every `say` once.

The daemon and mosquitto share a network namespace of the test's own whose loopback drops a share of
the MQTT packets at random and rate-limits them; in the middle the link is cut outright for longer than
the broker's keepalive grace, so the broker drops the daemon's connection and queues what is published
meanwhile in its persistent session, and what was in flight is delivered again after the reconnect.
The test publishes and records over the broker's Unix socket, untouched by the loss. Every `say` must
get exactly one terminal event, `finished`, be started once and be written once (one WAV per id):
nothing lost, nothing spoken twice.

Events are QoS 1 too, so a subscriber may receive one event twice when the daemon's publish is
redelivered over the bad link (same payload, same `t_event`): the test counts distinct events, as
docs/mqtt.md tells subscribers to do.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import compile_cache
import pytest
from lossy_link import LossyLink, Netns, NetnsMosquitto

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SITE = "lossy"
KEEPALIVE_S = 5  # the least mqtt.keepalive: the broker gives up on a silent client after 1.5 x this
LOSS, RATE_KBIT = 0.2, 256  # a bad site link: a fifth of the packets lost, a slow line
BEFORE_CUT, DURING_CUT, AFTER_CUT = 8, 8, 8
TERMINAL = ("finished", "error", "cancelled", "expired", "rejected")


@pytest.fixture
def netns():
    made = Netns()
    yield made
    made.delete()


@pytest.fixture
def broker(netns, tmp_path):
    started = NetnsMosquitto(netns, tmp_path)
    started.start()
    yield started
    started.stop()


def daemon_config(tmp_path: Path, bundle: Path, broker: NetnsMosquitto) -> Path:
    sections = {
        "model": {"bundle": str(bundle)},
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False,
                 "keepalive": KEEPALIVE_S},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"sink": "wav", "wav_dir": str(tmp_path / "wav"), "lead_in_ms": 0, "tail_ms": 0,
                  "chime_normal": "none"},
        "engine": {"max_frames": 6, "temperature": 0},
        "thermal": {"enabled": False}, "cache": {"enabled": False},
    }  # fmt: skip
    path = tmp_path / "qwen3tts.yaml"
    path.write_text(json.dumps(sections))
    return path


def test_every_say_over_a_lossy_link_is_spoken_exactly_once(tmp_path, tiny_models, netns, broker,
                                                            recorder_factory):  # fmt: skip
    bundle = tiny_models.bundle("custom_voice", "tiny", "int8")
    recorder = recorder_factory(broker, [f"qwen3tts/{SITE}/#"])
    link = LossyLink(netns, broker.port)
    log = tmp_path / "daemon.log"
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    command = [*netns.prefix(), sys.executable, "-m", "qwen3tts", "--config",
               str(daemon_config(tmp_path, bundle, broker)), "run"]  # fmt: skip
    with open(log, "wb") as out:
        daemon = compile_cache.popen(command, tmp_path, env, stdout=out, stderr=subprocess.STDOUT)

    def distinct(kind_filter) -> dict[str, Counter]:
        """{id: Counter of event kinds}, each distinct event payload counted once."""
        payloads = {m.payload for m in recorder.on(f"qwen3tts/{SITE}/event")}
        counts: dict[str, Counter] = {}
        for event in map(json.loads, payloads):
            if kind_filter(event["event"]):
                counts.setdefault(event.get("id"), Counter())[event["event"]] += 1
        return counts

    def say(ann_id: str) -> None:
        recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": ann_id, "text": f"Message {ann_id}."}))

    def wait_ended(ids: list[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while missing := [i for i in ids if i not in distinct(lambda k: k in TERMINAL)]:
            if time.monotonic() > deadline:
                pytest.fail(f"no terminal event for {missing} within {timeout:.0f} s; daemon log:\n"
                            f"{log.read_text(errors='replace')[-6000:]}")  # fmt: skip
            time.sleep(0.2)

    try:
        recorder.wait_for(lambda _: any(m.payload == b"online" for m in recorder.on(
            f"qwen3tts/{SITE}/availability")), 180)  # fmt: skip
        ids = [f"m{i:02d}" for i in range(BEFORE_CUT + DURING_CUT + AFTER_CUT)]
        link.lossy(loss=LOSS, rate_kbit=RATE_KBIT)
        for ann_id in ids[:BEFORE_CUT]:
            say(ann_id)
        link.cut()  # longer than 1.5 x keepalive: the broker drops the daemon and queues for its session
        for ann_id in ids[BEFORE_CUT : BEFORE_CUT + DURING_CUT]:
            say(ann_id)
        recorder.wait_for(lambda _: recorder.on(f"qwen3tts/{SITE}/availability")[-1].payload == b"offline",
                          60)  # fmt: skip  # the broker sent the daemon's will: it gave the connection up
        link.lossy(loss=LOSS, rate_kbit=RATE_KBIT)
        for ann_id in ids[BEFORE_CUT + DURING_CUT :]:
            say(ann_id)
        wait_ended(ids, 300)
        link.clear()
        say("last")  # a redelivered duplicate would be handled before this one ends
        wait_ended(["last"], 120)

        ended = distinct(lambda k: k in TERMINAL)
        started = distinct(lambda k: k == "started")
        assert {i: ended[i] for i in ids} == {i: Counter(finished=1) for i in ids}
        assert {i: started.get(i) for i in ids} == {i: Counter(started=1) for i in ids}
        wavs = Counter(p.name.split("-", 1)[1].removesuffix(".wav") for p in (tmp_path / "wav").glob("*.wav"))
        assert {i: wavs[i] for i in ids} == {i: 1 for i in ids}
        # the link really was bad: packets dropped, and the daemon had to connect again
        text = log.read_text(errors="replace")
        assert link.dropped() > 0 and text.count("connected to 127.0.0.1") >= 2, text[-3000:]
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(60) == 0, text[-3000:]
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(10)
        print(log.read_text(errors="replace")[-3000:])
