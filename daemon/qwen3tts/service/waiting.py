"""The daemon without a bundle: up, reachable and honest about it, until a bundle exists.

A package installed on a box has no model yet (nothing is ever downloaded). Instead of failing at every
start (and systemd giving up after five), `qwen3tts run` comes up in this mode: READY=1 with a STATUS
naming the missing bundle and the command that builds it, one warning in the journal, the watchdog fed,
availability `online` and a retained status `{"state": "no_bundle", "problem": ...}` on MQTT, and every
`say` answered with `rejected` naming the problem (so nothing waits for audio that cannot come). Every
few seconds, and at once on SIGHUP, it looks again; once the bundle's manifest exists it steps aside and
`run` starts the daemon proper in the same process.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from qwen3tts import __version__
from qwen3tts.appliance.mqtt.answers import announcement_events
from qwen3tts.appliance.mqtt.client import MqttClient
from qwen3tts.appliance.mqtt.events import Status
from qwen3tts.appliance.mqtt.intake import Intake
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.systemd.notify import Notifier
from qwen3tts.appliance.systemd.supervisor import Supervisor
from qwen3tts.appliance.systemd.watchdog import Heartbeats, Watchdog
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)

LOOK_AGAIN_S = 5.0


def missing_bundle_problem(bundle: Path) -> str:
    from qwen3tts.paths import default_bundle

    demo = " or `qwen3tts run --embedded` for the random demo bundle" if bundle == default_bundle() else ""
    return (
        f"no bundle at {bundle}: build one from a release checkpoint with "
        f"`qwen3tts build --checkpoint DIR --out {bundle}` (docs/models.md){demo}"
    )


class Refusing:
    """The announcer's place while there is no bundle: every command answered, nothing queued."""

    def __init__(self, problem: str, publish):
        self.problem, self.publish = problem, publish

    def enqueue(self, ann, redelivered: bool = False, ack=None) -> None:
        for message in announcement_events(ann, "rejected", self.problem, None, ann.warnings):
            self.publish(message)
        if ack is not None:
            ack()

    def stop(self, scope, ann_id, answer) -> None:
        answer("not_found", id=ann_id, scope=scope, reason="nothing plays: " + self.problem)

    def set_volume(self, volume, answer=None) -> None:
        if answer is not None:
            answer("volume_set", volume=volume)

    def set_voice(self, voice, answer=None) -> None:
        if answer is not None:
            answer("voice_set", voice=voice)


class WaitingForBundle:
    """`start()`, then `wait()` returns True once the bundle exists (False: stopped by a signal)."""

    def __init__(self, settings: Settings, notifier: Notifier | None = None):
        self.settings = settings
        self.bundle = Path(settings.model.bundle)
        self.problem = missing_bundle_problem(self.bundle)
        self.notifier = notifier or Notifier()
        self.heartbeats = Heartbeats()
        self.supervisor = Supervisor(on_fatal=lambda worker: self.stop())
        self.exit_code = 0
        self._look = threading.Event()
        self._stopped = threading.Event()
        self._found = False
        self.mqtt: MqttClient | None = None

    def start(self) -> None:
        log.warning("%s; waiting for it (the daemon starts by itself once it exists)", self.problem)
        self.heartbeats.register("bundle")
        self.mqtt = MqttClient(self.settings.mqtt, on_inbound=self._inbound)
        policy = AnnouncementPolicy.from_settings(
            self.settings.announcements, max_text_chars=self.settings.engine.max_text_chars
        )
        self.intake = Intake(
            Refusing(self.problem, self.mqtt.publish), policy, self.mqtt.topics, self.mqtt.publish
        )
        self.supervisor.start("intake", self.intake.run)
        self.mqtt.start(self.supervisor)
        status = Status(state="no_bundle", bundle=str(self.bundle), problem=self.problem, version=__version__)
        self.mqtt.publish(status)
        self.notifier.ready(self.problem)
        self.watchdog = Watchdog(self.notifier, self.heartbeats)
        if self.notifier.watchdog_interval is not None:
            self.supervisor.start("watchdog", self.watchdog.run)
        self.supervisor.start("bundle", self._watch)

    def _inbound(self, inbound) -> None:
        self.intake.post(inbound)

    def _watch(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.heartbeats.beat("bundle")
            if (self.bundle / "manifest.json").exists():
                log.info("bundle %s found; starting", self.bundle)
                self._found = True
                threading.Thread(target=self.stop, name="bundle-found").start()  # it joins this worker
                return
            self._look.wait(LOOK_AGAIN_S)
            self._look.clear()

    def reload(self) -> None:
        """SIGHUP: look for the bundle at once (`systemctl reload` after building it)."""
        self.notifier.reloading()
        self._look.set()
        self.notifier.ready(self.problem)

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        if not self._found:
            self.notifier.stopping()
        self.intake.close()
        self.supervisor.stop(timeout=5, keep=("mqtt",))  # its loop ends when it disconnects, below
        if self.mqtt is not None:
            self.mqtt.stop()
        self.supervisor.stop(timeout=5)
        self._stopped.set()

    def wait(self, timeout: float | None = None) -> bool:
        """True when stopped (either way); `found` says whether the bundle appeared."""
        return self._stopped.wait(timeout)

    @property
    def found(self) -> bool:
        return self._found
