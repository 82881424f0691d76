"""`qwen3tts run` as a subprocess: default paths, start-up signals, journald logs, no random weights
where real ones belong. A real mosquitto on a free loopback port; the state and cache directories
are per test (XDG_STATE_HOME / XDG_CACHE_HOME), so the embedded default bundle lives in tmp_path.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import compile_cache
import pytest

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

SITE = "life"


class Run:
    """`python -m qwen3tts ... run` with stdout and stderr in separate files; killed by pid at the end."""

    def __init__(self, tmp_path: Path, args: list[str], env: dict[str, str] | None = None, journal=False):
        self.out, self.err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
        env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), **(env or {})}
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            if journal:  # what systemd does: JOURNAL_STREAM names the stream stderr is connected to
                stat = os.fstat(err.fileno())
                env["JOURNAL_STREAM"] = f"{stat.st_dev}:{stat.st_ino}"
            self.process = compile_cache.popen(
                [sys.executable, "-m", "qwen3tts", *args], tmp_path / "cache", env, stdout=out, stderr=err
            )

    def wait_for_log(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.stderr():
            assert self.process.poll() is None, f"exited {self.process.returncode}:\n{self.stderr()}"
            assert time.monotonic() < deadline, f"no {text!r} in:\n{self.stderr()}"
            time.sleep(0.05)

    def signal_and_wait(self, signum: int, timeout: float = 30) -> int:
        self.process.send_signal(signum)
        return self.process.wait(timeout)

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def runs():
    started: list[Run] = []

    def start(*args, **kwargs) -> Run:
        started.append(Run(*args, **kwargs))
        return started[-1]

    yield start
    for run in started:
        run.kill()


def daemon_args(broker, *extra: str) -> list[str]:
    sets = [f"mqtt.port={broker.port}", f"mqtt.site={SITE}", "mqtt.discovery=false", "audio.sink=wav"]
    sets += ["thermal.enabled=false", *extra]
    return [arg for item in sets for arg in ("--set", item)]


def default_bundle(tmp_path: Path) -> Path:
    return tmp_path / "state" / "qwen3tts" / "bundle-tiny"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_while_the_embedded_bundle_is_being_built_exits_0_at_once(tmp_path, mosquitto, runs, signum):
    run = runs(tmp_path, [*daemon_args(mosquitto), "run", "--embedded"])
    run.wait_for_log("talker graph ...")  # inside build_bundle: nncf and OpenVINO at work
    assert run.signal_and_wait(signum) == 0
    assert "stop requested during start-up" in run.stderr()
    assert "ready" not in run.stderr()
    assert not (default_bundle(tmp_path) / "manifest.json").exists()  # it did not carry on building


def test_a_stop_while_the_graphs_compile_exits_0(tmp_path, mosquitto, runs, tiny_models):
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny", "f32"), default_bundle(tmp_path))
    run = runs(tmp_path, [*daemon_args(mosquitto), "run"])
    run.wait_for_log("talker runs on")  # the code predictor and codec compile next
    assert run.signal_and_wait(signal.SIGTERM) == 0
    if "ready:" not in run.stderr():  # on a fast machine the compile may already be over: a normal stop
        assert "stop requested during start-up" in run.stderr()


def test_a_missing_bundle_keeps_the_daemon_up_saying_how_to_build_it_until_one_exists(
    tmp_path, mosquitto, runs, recorder_factory, tiny_models
):
    """What a freshly installed box does (issue 26): no crash loop, the problem in the status, every say
    refused naming it; once the bundle exists a SIGHUP (or the next look) starts the daemon proper."""
    bundle = tmp_path / "real-bundle"
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    run = runs(tmp_path, [*daemon_args(mosquitto, f"model.bundle={bundle}"), "run", "--embedded"])
    run.wait_for_log(f"qwen3tts build --checkpoint DIR --out {bundle}")
    status = recorder.wait_for(lambda ms: any(m.topic.endswith("/status") for m in ms), 30)
    body = json.loads(next(m for m in status if m.topic.endswith("/status")).payload)
    assert body["state"] == "no_bundle" and f"--out {bundle}" in body["problem"]
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": "early", "text": "Anyone there?"}))
    event = f"qwen3tts/{SITE}/event"
    rejected = recorder.wait_for(lambda ms: any(m.topic == event and b'"early"' in m.payload for m in ms), 10)
    answer = json.loads(next(m for m in rejected if m.topic == event and b'"early"' in m.payload).payload)
    assert answer["event"] == "rejected" and "no bundle at" in answer["reason"]
    assert not bundle.exists() and not default_bundle(tmp_path).exists()  # never random weights here
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny"), bundle)
    run.process.send_signal(signal.SIGHUP)  # "I built it": look now
    run.wait_for_log("ready:", timeout=180)  # the same process, started again with the bundle
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps({"id": "later", "text": "Now it speaks."}))
    finished = [b'"finished"', b'"later"']
    recorder.wait_for(lambda ms: any(all(x in m.payload for x in finished) for m in ms), 120)
    assert run.signal_and_wait(signal.SIGTERM, 60) == 0


def test_without_embedded_the_default_bundle_is_not_built_and_the_problem_names_both_ways(
    tmp_path, mosquitto, runs
):
    run = runs(tmp_path, [*daemon_args(mosquitto), "run"])
    run.wait_for_log("qwen3tts build --checkpoint")
    assert "run --embedded" in run.stderr()
    assert run.signal_and_wait(signal.SIGTERM, 30) == 0
    assert not default_bundle(tmp_path).exists()


def test_under_journald_every_line_has_a_priority_normal_states_are_not_warnings_and_status_says_random(
    tmp_path, mosquitto, runs, tiny_models, recorder_factory
):
    shutil.copytree(tiny_models.bundle("custom_voice", "tiny", "f32"), default_bundle(tmp_path))
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/status"])
    run = runs(tmp_path, [*daemon_args(mosquitto), "run", "--embedded"], journal=True)
    status = recorder.wait_for(lambda msgs: bool(msgs), timeout=120)[-1]
    assert json.loads(status.payload)["weights"] == "random (qwen3tts tiny)"
    assert run.signal_and_wait(signal.SIGTERM) == 0
    lines = run.stderr().splitlines()
    assert lines and all(line[:3] in ("<6>", "<7>") for line in lines), lines  # info only: nothing went wrong
    assert any("with random (qwen3tts tiny) weights" in line for line in lines)
    assert not any("reconnecting" in line for line in lines)
    for once in ("ready:", "stopping (", "stopped"):
        assert sum(once in line for line in lines) == 1, (once, lines)
    wav_dir = tmp_path / "state" / "qwen3tts" / "wav"
    assert wav_dir.is_dir() and (tmp_path / "cache" / "qwen3tts" / "openvino").is_dir()  # default paths used
