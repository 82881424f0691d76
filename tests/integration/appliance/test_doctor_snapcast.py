"""`qwen3tts doctor` and the Snapcast zones: a real snapserver on loopback is a passing check naming its
address and stream; a zone whose snapserver port is closed is a failed, needed check with the address,
the reason and the fix, and the doctor still reports everything else and exits 1 (no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from mosquitto_broker import free_port
from snapcast_rig import Snapserver


@pytest.fixture
def snapserver(tmp_path):
    workdir = tmp_path / "snap"
    workdir.mkdir()
    server = Snapserver(workdir)
    server.start()
    yield server
    server.stop()


def config_with_zones(tmp_path, zones: list[dict]):
    path = tmp_path / "qwen3tts.yaml"
    path.write_text(json.dumps({"audio": {"sink": "null"}, "zones": zones, "thermal": {"enabled": False}}))
    return path


def doctor_json(config) -> tuple[int, dict]:
    result = subprocess.run(
        [sys.executable, "-m", "qwen3tts", "--config", str(config), "doctor", "--json", "--timeout", "2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    document = json.loads(result.stdout)
    return result.returncode, {c["name"]: c for c in document["checks"]}


def test_a_reachable_snapserver_passes_and_a_closed_port_is_a_failed_check_with_address_and_reason(
    tmp_path, snapserver
):
    closed = free_port()
    config = config_with_zones(tmp_path, [
        {"name": "hall", "output": "snapcast",
         "snapcast": {"control_port": snapserver.control_port, "source": snapserver.tcp_source}},
        {"name": "yard", "output": "snapcast", "snapcast": {"control_port": closed}},
        {"name": "desk", "output": "null"},
    ])  # fmt: skip
    code, checks = doctor_json(config)
    hall, yard = checks["snapcast hall"], checks["snapcast yard"]
    assert hall["ok"] is True, hall
    assert (
        f"127.0.0.1:{snapserver.control_port}" in hall["detail"]
        and "'announcements' 48000:16:2" in hall["detail"]
    )
    assert yard["ok"] is False and yard["needed"] is True, yard
    assert f"127.0.0.1:{closed}" in yard["detail"] and "refused" in yard["detail"].lower(), yard
    assert "zones[1].snapcast" in yard["fix"]
    assert "snapcast desk" not in checks  # only zones with a Snapcast output are asked
    assert code == 1 and "broker" in checks  # the rest of the chain was still checked


def test_a_stream_the_snapserver_does_not_have_is_reported_with_the_streams_it_has(tmp_path, snapserver):
    config = config_with_zones(tmp_path, [
        {"name": "hall", "output": "snapcast",
         "snapcast": {"control_port": snapserver.control_port, "stream": "nope"}},
    ])  # fmt: skip
    _, checks = doctor_json(config)
    hall = checks["snapcast hall"]
    assert hall["ok"] is False and "no stream 'nope'" in hall["detail"] and "announcements" in hall["detail"]
    assert f"127.0.0.1:{snapserver.control_port}" in hall["detail"]
