"""`qwen3tts fleet` as a user runs it, against a real mosquitto holding retained status and availability."""

from __future__ import annotations

import json
import socket
import subprocess
import sys


def fleet(port: int, *args: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "qwen3tts",
        "--set",
        f"mqtt.port={port}",
        "fleet",
        "--timeout",
        "5",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_fleet_lists_every_box_with_a_retained_status(mosquitto, recorder_factory):
    recorder = recorder_factory(mosquitto, [])
    hall = {"state": "speaking", "queue_depth": 3, "version": "9.9", "zones": ["hall", "foyer"],
            "pool": {"group": "g", "state": "holding"}, "engine": {"running": 2, "max_batch": 4}}  # fmt: skip
    recorder.publish("qwen3tts/hall/status", json.dumps(hall), retain=True)
    recorder.publish("qwen3tts/hall/availability", "online", retain=True)
    recorder.publish("qwen3tts/dock/status", json.dumps({"state": "idle", "queue_depth": 0}), retain=True)
    recorder.publish("qwen3tts/dock/availability", "offline", retain=True)
    recorder.publish("qwen3tts/junk/status", "not json", retain=True)
    recorder.publish("qwen3tts/live/status", json.dumps({"state": "idle"}))  # not retained: not a box

    as_json = fleet(mosquitto.port, "--json")
    assert as_json.returncode == 0, as_json.stderr
    rows = {r["site"]: r for r in json.loads(as_json.stdout)}
    assert sorted(rows) == ["dock", "hall", "junk"]
    assert (rows["hall"]["state"], rows["hall"]["queue_depth"], rows["hall"]["zones"]) == (
        "speaking", 3, ["hall", "foyer"])  # fmt: skip
    assert rows["hall"]["pool"] == {"group": "g", "state": "holding"} and rows["hall"]["version"] == "9.9"
    assert (rows["dock"]["state"], rows["dock"]["availability"]) == ("offline", "offline")
    assert rows["junk"]["problem"].startswith("status unreadable")

    text = fleet(mosquitto.port)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].split()[:3] == ["SITE", "AVAILABILITY", "STATE"]
    assert [line.split()[0] for line in lines[1:]] == ["dock", "hall", "junk"]


def test_fleet_says_clearly_when_the_broker_is_unreachable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    result = fleet(port)
    assert result.returncode != 0
    assert "cannot reach the broker" in result.stderr and "Traceback" not in result.stderr
