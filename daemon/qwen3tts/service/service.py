"""The daemon: wiring and lifecycle only (the composition root; the one package that imports every layer).

Workers, each supervised (appliance/systemd/supervisor.py): paho's network loop, the intake (MQTT
messages -> the announcer's inbox), the announcer (the one loop that changes the queue and the
announcements), the engine step loop, the audio thread per zone (playback), the status publisher, the
thermal monitor and the watchdog. Heartbeats come from progress, and WATCHDOG=1 goes out only while all
are fresh.
Start order: bundle compiled and sink open -> READY=1 (not gated on the broker) -> spool -> announcer -> MQTT.
SIGTERM: STOPPING=1, stop reading MQTT, finish or cut the current announcement, `offline`, exit 0.
SIGHUP (reload.py): RELOADING=1, topics, voice and volume where the file changed them, the registered
voices and the lexicon, without touching the queue; then READY=1.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from pathlib import Path

from qwen3tts.appliance.announcements.announcer import Announcer
from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.mqtt.events import Status
from qwen3tts.appliance.systemd.notify import ExtendStartTimeout, Notifier
from qwen3tts.appliance.systemd.supervisor import Supervisor
from qwen3tts.appliance.systemd.watchdog import Heartbeats, Watchdog
from qwen3tts.appliance.thermal.governor import ThermalMonitor
from qwen3tts.appliance.zones.hermes_satellite import SatelliteWaits
from qwen3tts.model.bundle import weights_kind
from qwen3tts.servers import Offer, RecentEvents, start_servers
from qwen3tts.service.announcer_factory import make_announcer
from qwen3tts.service.console import Console
from qwen3tts.service.front_end import text_front_end
from qwen3tts.service.interned_strings import settle_interned_strings
from qwen3tts.service.memory_trim import MemoryTrim
from qwen3tts.service.mqtt_door import MqttDoor
from qwen3tts.service.outbox import Outbox
from qwen3tts.service.outputs import OutputStates, audio_worker, open_sinks, zone_playbacks
from qwen3tts.service.owed_events import OwedEvents
from qwen3tts.service.reload import carry_changes, read_settings
from qwen3tts.service.renderer_outlet import QueueOutlet
from qwen3tts.service.status import appliance_figures, build_status
from qwen3tts.service.voices import load_registered_voices
from qwen3tts.settings import Settings
from qwen3tts.text.guard import GuardedFrontEnd
from qwen3tts.voices import voices_dir
from qwen3tts.voices.catalog import VoiceCatalog

log = logging.getLogger(__name__)

STATUS_INTERVAL_S = 30.0
DRAIN_TIMEOUT_S = 45.0


class Service:
    """Owns every component; `start()` then `wait()` until `stop()` (from a signal handler).

    `runtime` and `sink` may be given (tests: the real Engine over a fake runner, a null sink: the one
    zone `default`); otherwise they come from the settings, one sink per zone. `exit_code` turns 1 when
    a worker kept failing.
    """

    def __init__(self, settings: Settings, notifier: Notifier | None = None, config_path: Path | None = None,
                 *, runtime=None, sink=None):  # fmt: skip
        self.settings = settings
        self.config_path = config_path
        self.notifier = notifier or Notifier()
        self.heartbeats = Heartbeats()
        self.supervisor = Supervisor(on_fatal=self._fatal)
        self.exit_code = 0
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._status_dirty = threading.Event()
        self.outputs = OutputStates(self._status_dirty.set)
        self.outbox = Outbox(lambda: self.mqtt)  # every message out; counts what /metrics reports
        self.events = RecentEvents()  # for the status page; read by the servers' thread
        self.runtime = runtime
        self.sinks: dict[str, object] = {} if sink is None else {"default": sink}
        self.playbacks: dict[str, Playback] = {}
        self.satellites = SatelliteWaits()  # Hermes satellites' plays waiting for their playFinished
        self.mqtt: MqttDoor | None = None
        self.announcer: Announcer | None = None
        self.thermal: ThermalMonitor | None = None
        self.servers = None
        self.front_end: GuardedFrontEnd | None = None
        self.watchdog: Watchdog | None = None

    # ---- start ----

    def start(self) -> None:
        settings = self.settings
        self._load_runtime()
        engine, spec = self.runtime.engine, self.runtime.spec
        if not self.sinks:
            self.sinks = open_sinks(settings, self.outputs, self.outbox.publish, self.satellites, self._beat)
        self.text, self.front_end = text_front_end(
            settings.text, spec.languages, streams_here=settings.servers.wyoming.enabled
        )
        self.catalog = VoiceCatalog(spec.speakers, spec.languages)
        self._load_voices(settings)
        chimes = ChimeSet.from_settings(settings.audio)
        wake = lambda: self.announcer.wake()  # noqa: E731 (the announcer is made next)
        self.playbacks = zone_playbacks(
            settings, chimes, self.sinks, self._beat, wake, self.outbox.publish_duck
        )
        self.announcer = make_announcer(settings, engine, spec.speakers, chimes, self.text, self.catalog,
                                        self.playbacks, self._on_event, heartbeat=self._beat("announcer"),
                                        on_change=self._status_dirty.set)  # fmt: skip
        self.outbox.owed = OwedEvents(self.announcer.queue.spool.directory)  # ends a crash must not lose
        self.announcer.reporter.on_ending = self.outbox.owe
        if settings.thermal.enabled:
            beat = self._beat("thermal")
            self.thermal = ThermalMonitor(settings.thermal, engine, self._on_thermal, heartbeat=beat)
        self.supervisor.start("engine", engine.run)
        offer = Offer.from_spec(settings.model.bundle.name, spec, settings.voice, self.catalog)
        offer = replace(offer, defaults=self.announcer.lookahead.defaults)  # one default voice, every door
        console = Console(self)  # the status page's view of the appliance
        outlet = QueueOutlet(self.announcer)  # where the UPnP renderer's media goes
        self.servers = start_servers(settings, engine, offer, self._figures, text=self.text, console=console,
                                     outlet=outlet)  # fmt: skip
        for zone, playback in self.playbacks.items():
            self.supervisor.start(audio_worker(zone), playback.run)
        settle_interned_strings()  # a one-time 3.7 MB step taken now, not requests later
        plans = f"plan={self.runtime.plan.summary()}; decode={self.runtime.plan.decode_paths()}"
        weights, plan = weights_kind(self.runtime.manifest), self.runtime.plan.summary()
        log.info("ready: %s %s bundle with %s weights, devices %s, decode %s, sink %s", spec.size,
                 spec.variant, weights, plan, self.runtime.plan.decode_paths(),
                 ", ".join(f"{zone}={sink.name}" for zone, sink in self.sinks.items()))  # fmt: skip
        self.notifier.ready(f"ready; bundle={settings.model.bundle.name}; {plans}")
        self.mqtt = self._mqtt_door()  # before the announcer replays the spool: its events are queued
        self.mqtt.drop_rescued(self.announcer.queue.spool)  # what a pool rescuer took is not replayed
        # checked as the door does, texts read here; what ended before the stop is not replayed
        self.announcer.replay(check=self.mqtt.spooled_check, ended=self.outbox.owed.ids())
        self.outbox.resend()  # the ends the last process owed, before anything new
        self.supervisor.start("announcer", self.announcer.run)
        self.mqtt.start(self.supervisor)
        self._status_dirty.set()
        if self.thermal is not None:
            self.supervisor.start("thermal", self.thermal.run)
        self.watchdog = Watchdog(self.notifier, self.heartbeats)
        if self.notifier.watchdog_interval is not None:
            self.supervisor.start("watchdog", self.watchdog.run)
        self.supervisor.start("status", self._status_loop)

    def _load_runtime(self) -> None:
        if self.runtime is not None:
            return
        self.notifier.status("loading bundle and compiling graphs")
        with ExtendStartTimeout(self.notifier):
            from qwen3tts.runtime.loader import load_runtime

            self.runtime = load_runtime(
                self.settings.model.bundle, self.settings, heartbeat=self._beat("engine")
            )

    def _load_voices(self, settings: Settings) -> bool:
        builder = getattr(self.runtime, "prompt_builder", None)  # None: a runtime test double
        return load_registered_voices(self.catalog, voices_dir(settings), settings.model.bundle, builder)

    def reload_voices(self) -> None:
        """The registry read again after the status page changed it; the voices topic follows."""
        if self._load_voices(self.settings) and self.mqtt is not None:
            self.mqtt.announce_voices()

    def _mqtt_door(self) -> MqttDoor:
        return MqttDoor(self.settings, self.announcer, self.catalog, self.outbox.publish, self._beat("mqtt"),
                        supports_instruct=self.runtime.spec.supports_instruct,
                        play_finished=self.satellites.play_finished)  # fmt: skip

    # ---- workers and callbacks ----

    def _status_loop(self, stop: threading.Event) -> None:
        last = 0.0
        memory = MemoryTrim()  # freed heap back to the system, a drained flood's too (memory_trim.py)
        while not stop.is_set():
            self._status_dirty.wait(1.0)
            stats = self.runtime.engine.stats()
            memory.maybe_trim(idle=not (stats.num_running or stats.num_waiting))
            self.outbox.settle()  # the ends the broker acknowledged are paid
            if self._status_dirty.is_set() or time.monotonic() - last > STATUS_INTERVAL_S:
                self._status_dirty.clear()
                last = time.monotonic()
                self._publish_status()

    def _on_event(self, ann, event: str, reason: str, warnings: tuple[str, ...], **zones) -> None:
        """The announcer's lifecycle events, as MQTT messages (the event, its reply, Hermes answers)."""
        self.events.add(ann.id, event, reason)
        self.outbox.announce(ann, event, reason, warnings, **zones)
        if self.mqtt is not None:
            self.mqtt.on_queue(self.announcer.queue)

    def _on_thermal(self, level: str, batch: int, reason: str) -> None:
        self._status_dirty.set()  # the thermal monitor logs the change itself

    @property
    def sink(self):
        """The first zone's sink (the only one on a box without zones)."""
        return next(iter(self.sinks.values()), None)

    @property
    def playback(self) -> Playback | None:
        return next(iter(self.playbacks.values()), None)

    # ---- status ----

    def status(self) -> Status:
        return build_status(
            stopping=self._stopping.is_set(), announcer=self.announcer, runtime=self.runtime,
            thermal=self.thermal, audio=self.outputs.summary(self.sinks),
            bundle=str(self.settings.model.bundle), pool=self.mqtt.pool_status() if self.mqtt else {},
        )  # fmt: skip

    def _publish_status(self) -> None:
        status = self.status()
        self.outbox.publish(status)
        thermal = self.thermal.decision.notify_status() if self.thermal and self.thermal.decision else ""
        self.notifier.status(f"{status.state}; queue={status.queue_depth}; {thermal}".rstrip("; "))

    def _figures(self):
        """/metrics and /healthz: called on the servers' thread, reads only."""
        return appliance_figures(queue_depth=len(self.announcer.queue), playback=self.playback,
                                 thermal=self.thermal, sink_state=self.outputs.first_problem(),
                                 counts=self.outbox.counts)  # fmt: skip

    # ---- reload and stop ----

    def reload(self) -> None:
        """SIGHUP (reload.py): topics from the config file; voice and volume only where the file changed
        them, so a volume or voice set over MQTT survives a reload that did not touch it."""
        self.notifier.reloading()
        try:
            self._reload()
        finally:
            self.notifier.ready("reloaded")

    def _reload(self) -> None:
        fresh = read_settings(self.config_path, self.settings)
        if fresh is None:
            return
        old, self.settings = self.settings, fresh
        carry_changes(old, fresh, self.announcer, self.text, self.runtime.spec.speakers)
        voices_changed = self._load_voices(fresh)
        topics_changed = fresh.mqtt != old.mqtt
        if topics_changed and self.mqtt is not None:
            log.info("reload: MQTT settings changed, reconnecting")
            self.mqtt.stop(final=False)
            self.mqtt = self._mqtt_door()
            self.mqtt.start(self.supervisor)
        elif voices_changed and self.mqtt is not None:  # the topic and Home Assistant follow
            self.mqtt.announce_voices()
        if not self.announcer.applied(timeout=DRAIN_TIMEOUT_S):
            log.error("reload: the announcer did not take the new settings within %.0f s", DRAIN_TIMEOUT_S)
        log.info("reloaded: MQTT %s", "reconnected" if topics_changed else "unchanged")
        self._status_dirty.set()

    def stop(self) -> None:
        """Stop accepting, finish or cut what plays, say offline; safe to call once from any thread,
        also before start() completed. Every wait is bounded: a wedged worker is left behind."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self.notifier.stopping()
        finish = self.settings.announcements.on_shutdown == "finish"
        log.info("stopping (%s the current announcement)", "finishing" if finish else "cutting")
        if self.mqtt is not None:
            self.mqtt.stop_intake()
        if self.announcer is not None and not self.announcer.drain(finish=finish, timeout=DRAIN_TIMEOUT_S):
            log.error("the current announcement did not end within %.0f s; stopping anyway", DRAIN_TIMEOUT_S)
        # the servers still wait on the engine's handles; MQTT still says `offline` below
        self.supervisor.stop(timeout=5, keep=("engine", "mqtt"))
        for part in (self.servers, self.front_end):
            if part is not None:
                part.stop()
        if self.runtime is not None:
            self.runtime.engine.stop(timeout=5)  # wakes its loop; what is unfinished ends cancelled
        if self.mqtt is not None:
            self._publish_status()
            self.mqtt.stop()  # its `offline` acknowledged: so is every end published before it
            self.outbox.settle()  # paid, not sent again at the next start
        self.supervisor.stop(timeout=5)
        for sink in self.sinks.values():
            sink.close()
        log.info("stopped")
        self._stopped.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    def _fatal(self, worker: str) -> None:
        """A worker keeps failing: stop (bounded) and let the process exit non-zero for systemd."""
        self.exit_code = 1
        threading.Thread(target=self.stop, name="fatal-stop").start()

    # ---- helpers ----

    def _beat(self, name: str):
        self.heartbeats.register(name)
        return lambda: self.heartbeats.beat(name)
