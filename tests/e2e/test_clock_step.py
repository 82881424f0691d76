"""The wall clock of the running daemon stepped by an hour, forwards and then back, as NTP does at boot.

The daemon runs with a small LD_PRELOAD shim (tests/support/wall_clock_step.c, built here with the C
compiler) that adds the seconds written in a file to every wall-clock read of that process; its monotonic
clock, sleeps and waits are untouched. Announcements wait behind a long one (a WAV sink paced like a
loudspeaker) while the clock steps:

- forwards: a `ttl` of 60 s and an `expires_at` 60 s ahead still play (before, both were `expired` at once);
- back: a repeat plays after its `repeat_interval` (before, it waited the hour), and a `ttl` of 3 s that
  ran out while it waited is `expired` (before, the step gave it an hour more).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import compile_cache
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SITE = "clock"
SHIM = Path(__file__).resolve().parents[1] / "support" / "wall_clock_step.c"
LONG = " ".join(f"This is part {n} of a long notice." for n in range(1, 6))  # about 5 s at the frame cap
HOUR = 3600


@pytest.fixture
def shim(tmp_path) -> Path:
    compiler = next((c for c in ("cc", "gcc") if shutil.which(c)), None)
    if compiler is None:
        pytest.fail("no C compiler (apt-get install gcc): the clock-step test builds its shim", pytrace=False)
    built = tmp_path / "libwallstep.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(built), str(SHIM), "-ldl"], check=True)
    return built


def daemon_config(tmp_path: Path, bundle: Path, broker) -> Path:
    sections = {
        "model": {"bundle": str(bundle)},
        "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False},
        "announcements": {"spool_dir": str(tmp_path / "spool")},
        "audio": {"sink": "wav", "wav_dir": str(tmp_path / "wav"), "wav_realtime": True, "lead_in_ms": 0,
                  "tail_ms": 0, "chime_normal": "none", "jitter_buffer_ms": 0},
        "engine": {"max_frames": 12, "temperature": 0},  # 1 s a sentence, played in real time
        "thermal": {"enabled": False}, "cache": {"enabled": False},
    }  # fmt: skip
    path = tmp_path / "qwen3tts.yaml"
    path.write_text(json.dumps(sections))
    return path


def test_ttl_expires_at_and_repeats_keep_their_time_when_the_wall_clock_steps(
    tmp_path, tiny_models, mosquitto, recorder_factory, shim
):
    bundle = tiny_models.bundle("custom_voice", "tiny", "int8")
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    step_file = tmp_path / "wall-step"
    step_file.write_text("0")
    log = tmp_path / "daemon.log"
    env = {**os.environ, "LD_PRELOAD": str(shim), "QWEN3TTS_WALL_STEP_FILE": str(step_file),
           "XDG_STATE_HOME": str(tmp_path / "state")}  # fmt: skip
    command = [
        sys.executable,
        "-m",
        "qwen3tts",
        "--config",
        str(daemon_config(tmp_path, bundle, mosquitto)),
        "run",
    ]
    with open(log, "wb") as out:
        daemon = compile_cache.popen(command, tmp_path, env, stdout=out, stderr=subprocess.STDOUT)

    def events(ann_id: str) -> list[dict]:
        found = [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]
        return [e for e in found if e.get("id") == ann_id]

    def kinds(ann_id: str) -> list[str]:
        return [e["event"] for e in events(ann_id)]

    def wait(predicate, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                pytest.fail(
                    f"{what} within {timeout:.0f} s; daemon log:\n{log.read_text(errors='replace')[-4000:]}"
                )
            time.sleep(0.05)

    def say(ann_id: str, text: str, **fields) -> None:
        recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": ann_id, "text": text, **fields}))

    try:
        wait(lambda: any(m.payload == b"online" for m in recorder.on(f"qwen3tts/{SITE}/availability")), 180,
             "the daemon came not online")  # fmt: skip

        # forwards: what waits behind a long announcement keeps the time it was given
        say("long-1", LONG)
        say("ttl-60", "Train at platform one.", ttl=60)
        say("at-60", "Train at platform two.", expires_at=time.time() + 60)
        wait(lambda: "queued" in kinds("ttl-60") and "queued" in kinds("at-60"), 60, "not queued")
        step_file.write_text(str(HOUR))
        assert "started" not in kinds("ttl-60") + kinds("at-60"), "the long one ended before the step"
        wait(lambda: "finished" in kinds("at-60"), 180, "at-60 did not finish")
        assert kinds("ttl-60")[-1] == "finished" and kinds("at-60")[-1] == "finished"

        # back: a repeat keeps its interval, and a ttl that ran out while it waited is not extended
        say("bell", "Ding.", repeat=2, repeat_interval=2)
        wait(lambda: "finished" in kinds("bell"), 120, "the bell did not play once")
        say("long-2", LONG)
        say("ttl-3", "Only for three seconds.", ttl=3)  # behind the 5 s of long-2
        wait(lambda: "queued" in kinds("ttl-3"), 60, "ttl-3 not queued")
        step_file.write_text("0")
        assert "started" not in kinds("ttl-3")
        wait(lambda: kinds("bell").count("finished") == 2, 120, "the repeat did not come after its interval")
        wait(lambda: "finished" in kinds("long-2"), 180, "long-2 did not finish")
        assert kinds("ttl-3")[-1] == "expired", events("ttl-3")
        assert "started" not in kinds("ttl-3")
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(60) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(10)
