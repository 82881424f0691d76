"""The MQTT front door without engine or audio: client + intake + durable queue, nothing playing.

Used in-process by the integration tests (`IntakeRunner`) and as a subprocess that a test kills
with SIGKILL (`python mqtt_intake_runner.py HOST PORT SITE SPOOL_DIR [PROTOCOL]`). The subprocess
prints `REPLAYED <json ids>` after loading the spool and `READY` once subscribed. With
QWEN3TTS_TEST_KILL_AFTER_SPOOL=1 it SIGKILLs itself right after the first spool write, before the
MQTT ack: the window in which a crash leaves a spooled message for the broker to redeliver.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import sys
import threading
from pathlib import Path

from qwen3tts.appliance.mqtt.discovery import discovery_configs
from qwen3tts.appliance.mqtt.intake import AnnouncementIntake, AnnouncementPolicy
from qwen3tts.appliance.mqtt.messages import Inbound, Message
from qwen3tts.appliance.mqtt.client import MqttClient
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.settings import MqttSettings


class IntakeRunner:
    """Everything between the broker and the player, with the player's commands recorded."""

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
    ) -> None:
        settings = MqttSettings(host=host, port=port, site=site, protocol=protocol, hermes=hermes)
        self.inbound: queue.Queue[Inbound] = queue.Queue()
        self.queue = AnnouncementQueue(spool_dir, max_queue=max_queue)
        self.client = MqttClient(settings, on_inbound=self.inbound.put, reconnect_delay=(1, 2))
        self.intake = AnnouncementIntake(
            self.queue,
            policy or AnnouncementPolicy(),
            self.client.topics,
            ack=self.client.ack,
            hermes_site_id=settings.hermes_site_id,
            discovery=lambda: discovery_configs(self.client.topics, voices=("ryan", "vivian")),
        )
        self.commands: list[Message] = []
        self.replayed_ids: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="intake", daemon=True)

    @property
    def base(self) -> str:
        return self.client.topics.base

    def start(self, timeout: float = 5.0) -> IntakeRunner:
        expired_events = self.intake.replay()
        self.replayed_ids = self.queue.ids()
        for message in expired_events:
            self.client.publish(message)  # buffered until connected
        self.client.start()
        self._thread.start()
        if not self.client.wait_connected(timeout):
            raise TimeoutError("the MQTT client did not connect")
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.client.stop()

    def _serve(self) -> None:
        self.intake.serve(self.inbound, self.client.publish, self.commands.append, self._stop)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    host, port, site, spool_dir = argv[0], int(argv[1]), argv[2], Path(argv[3])
    protocol = argv[4] if len(argv) > 4 else "5"
    runner = IntakeRunner(host, port, site, spool_dir, protocol=protocol)
    if os.environ.get("QWEN3TTS_TEST_KILL_AFTER_SPOOL"):
        put = runner.queue.put

        def put_then_die(ann) -> None:
            put(ann)
            os.kill(os.getpid(), signal.SIGKILL)

        runner.queue.put = put_then_die
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
