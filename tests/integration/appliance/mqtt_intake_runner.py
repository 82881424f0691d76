"""The MQTT door with its real workers: client -> intake worker -> announcer worker -> audio worker.

The real `MqttClient`, `Intake.run`, `Announcer.run` and `Playback.run`, each under the real Supervisor,
on a durable spool. The engine is the real one over the fake runner, never started: nothing is ever
synthesised, so the first announcement becomes the playing one and waits for speech for good (a stop or
the shutdown cuts it), the others wait in the queue, and everything accepted stays spooled where tests
can read it.

Used in-process by the integration tests (`IntakeRunner`) and as a subprocess that a test kills
with SIGKILL (`python mqtt_intake_runner.py HOST PORT SITE SPOOL_DIR [PROTOCOL]`). The subprocess
prints `REPLAYED <json ids>` after loading the spool and `READY` once subscribed; it logs each message
that arrives with the DUP flag (`inbound DUP packet N`). With QWEN3TTS_TEST_KILL_AFTER_SPOOL=1 it
SIGKILLs itself right after the first spool write, before the MQTT ack: the window in which a crash
leaves a spooled message for the broker to deliver again.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))  # also when run as a script

from announcer_rig import EventLog, RigSink, fake_engine
from mqtt_door import appliance_settings, build_announcer, policy_for, replay_spool

from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.mqtt.answers import announcement_events
from qwen3tts.appliance.mqtt.client import MqttClient
from qwen3tts.appliance.mqtt.discovery import discovery_configs
from qwen3tts.appliance.mqtt.intake import Intake
from qwen3tts.appliance.mqtt.messages import Inbound
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.systemd.supervisor import Supervisor
from qwen3tts.settings import MqttSettings

log = logging.getLogger("mqtt_intake_runner")


class IntakeRunner:
    """Everything between the broker and the sink, as the service wires it (without servers and status)."""

    def __init__(
        self,
        host: str,
        port: int,
        site: str,
        spool_dir: Path,
        *,
        protocol: str = "5",
        policy: AnnouncementPolicy | None = None,
        hermes: bool = False,
        max_queue: int = 100,
        max_queued_messages: int = 1000,
        zones: tuple[str, ...] = (),
    ) -> None:
        mqtt = MqttSettings(host=host, port=port, site=site, protocol=protocol, hermes=hermes,
                            max_queued_messages=max_queued_messages)  # fmt: skip
        settings = appliance_settings(spool_dir)
        policy = policy or policy_for()
        self.log = EventLog()
        """What the announcer emitted, with the announcements (wait on it with `log.wait_until`)."""
        self.fatal: list[str] = []
        self.engine = fake_engine()
        chimes = ChimeSet({"normal": None, "priority": None, "emergency": None})
        self.playbacks = {  # one sink and audio worker per zone, as the service has them
            zone: Playback(RigSink(), settings.audio, chimes, on_end=lambda: self.announcer.wake(), zone=zone)
            for zone in zones or ("default",)
        }
        self.playback = next(iter(self.playbacks.values()))
        self.sink = self.playback.sink
        self.announcer = build_announcer(settings, self.engine, self.playbacks, self._on_event,
                                         catalog=policy.catalog, max_queue=max_queue)  # fmt: skip
        self.queue = self.announcer.queue
        self.client = MqttClient(mqtt, on_inbound=self._post, reconnect_delay=(1, 2), zones=zones)
        topics = self.client.topics
        self.intake = Intake(
            self.announcer,
            policy,
            topics,
            self.client.publish,
            hermes_site_id=mqtt.hermes_site_id,
            discovery=lambda: discovery_configs(topics, voices=policy.catalog.names),
            room=self.client.backlog.wait_for_room,
        )
        self.supervisor = Supervisor(on_fatal=self.fatal.append, backoff_s=0.01)
        self.replayed_ids: list[str] = []

    @property
    def base(self) -> str:
        return self.client.topics.base

    def _post(self, inbound: Inbound) -> None:
        if inbound.dup:
            log.info("inbound DUP packet %s", inbound.message_id)
        self.intake.post(inbound)

    def _on_event(self, ann, event: str, reason: str, warnings: tuple[str, ...], **zones) -> None:
        self.log(ann, event, reason, warnings)
        for message in announcement_events(ann, event, reason, None, warnings, **zones):
            self.client.publish(message)  # buffered until connected

    def start(self, timeout: float = 5.0) -> IntakeRunner:
        replay_spool(self.announcer)
        self.replayed_ids = self.queue.ids()
        for zone, playback in self.playbacks.items():
            self.supervisor.start(f"audio:{zone}", playback.run)
        self.supervisor.start("announcer", self.announcer.run)
        self.supervisor.start("intake", self.intake.run)
        self.client.start()
        if not self.client.wait_connected(timeout):
            raise TimeoutError("the MQTT client did not connect")
        return self

    def stop(self) -> None:
        """As the service stops: stop reading, cut what plays (it stays spooled), disconnect."""
        self.intake.close()
        self.announcer.drain(finish=False, timeout=5)
        self.supervisor.stop(timeout=5)
        self.engine.stop(timeout=5)
        self.client.stop()

    # ---- looking ----

    def accepted(self) -> list:
        """Announcements the announcer queued (first time, not a resume), in that order."""
        entries = list(zip(self.log.entries, self.log.announcements))  # noqa: B905 (appended in this order)
        return [ann for (_, event, reason), ann in entries if event == "queued" and not reason]

    def wait_accepted(self, count: int, timeout: float = 10.0) -> list:
        if not self.log.wait_until(lambda: len(self.accepted()) >= count, timeout):
            raise AssertionError(
                f"{len(self.accepted())} of {count} announcements queued: {self.log.entries}"
            )
        return self.accepted()

    def settle(self, recorder, timeout: float = 10.0) -> None:
        """Wait until every message published before is answered: a stop for an id nobody uses goes
        through the intake and the announcer's inbox behind them, and its `not_found` comes after."""
        ghost = f"settle-{uuid.uuid4().hex[:8]}"
        recorder.publish(f"{self.base}/stop", json.dumps({"scope": "id", "id": ghost}))
        answer = ghost.encode()
        recorder.wait_for(lambda ms: any(answer in m.payload and b"not_found" in m.payload for m in ms),
                          timeout)  # fmt: skip


def spooled(spool_dir: Path) -> list[dict]:
    """The announcements in a spool directory, in spool order, read without touching anything (the
    spool's own `load()` also tidies up, which only its owner may do)."""
    files = sorted(Path(spool_dir).glob("*.json"))
    return [json.loads(path.read_text())["announcement"] for path in files]


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    host, port, site, spool_dir = argv[0], int(argv[1]), argv[2], Path(argv[3])
    protocol = argv[4] if len(argv) > 4 else "5"
    runner = IntakeRunner(host, port, site, spool_dir, protocol=protocol)
    if os.environ.get("QWEN3TTS_TEST_KILL_AFTER_SPOOL"):
        put = runner.queue.put

        def put_then_die(ann, redelivered=False):
            put(ann, redelivered)
            os.kill(os.getpid(), signal.SIGKILL)

        runner.queue.put = put_then_die
    return serve_until_sigterm(runner)


def serve_until_sigterm(runner: IntakeRunner) -> int:
    """Start, tell the test what the spool replayed and that it is ready, run until SIGTERM, stop."""
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    runner.start(timeout=10)
    print("REPLAYED " + json.dumps(runner.replayed_ids), flush=True)
    print("READY", flush=True)
    done.wait()
    runner.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
