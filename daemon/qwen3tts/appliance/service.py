"""The daemon: wiring and lifecycle only.

Workers, each supervised (supervisor.py): the intake (MQTT -> queue), the announcer (the one loop that
changes announcements), the audio thread (playback), the status publisher; beside them the engine step
loop, paho's network loop, the thermal monitor and the watchdog. Heartbeats come from progress, and
WATCHDOG=1 goes out only while all of them are fresh.
Start order: bundle compiled and sink open -> READY=1 (not gated on the broker) -> MQTT.
SIGTERM: STOPPING=1, stop accepting, finish or cut the current announcement, `offline`, exit 0.
SIGHUP (reload.py): reload topics, and voice and volume where the file changed them, without touching
the queue; the voices (voice_catalog.py: preset speakers + the operator's registered voices) are read
again at start and on SIGHUP.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from pathlib import Path

from qwen3tts.appliance.alsa import open_sink
from qwen3tts.appliance.announcer import Announcer
from qwen3tts.appliance.chimes import ChimeSet
from qwen3tts.appliance.controls import apply_control
from qwen3tts.appliance.events import Status
from qwen3tts.appliance.intake import AnnouncementIntake, AnnouncementPolicy
from qwen3tts.appliance.mqtt import MqttClient
from qwen3tts.appliance.notify import ExtendStartTimeout, Heartbeats, Notifier, Watchdog
from qwen3tts.appliance.phrase_replay import PhraseReplay
from qwen3tts.appliance.playback import Playback
from qwen3tts.appliance.queue import AnnouncementQueue
from qwen3tts.appliance.registered_voices import RegisteredVoices
from qwen3tts.appliance.reload import carry_changes, read_settings
from qwen3tts.appliance.status_report import appliance_figures, build_status
from qwen3tts.appliance.supervisor import Supervisor
from qwen3tts.appliance.synthesis import TextOptions
from qwen3tts.appliance.thermal import ThermalMonitor
from qwen3tts.appliance.voice_catalog import VoiceCatalog
from qwen3tts.model.bundle import weights_kind
from qwen3tts.servers import ApplianceFigures, BundleInfo, start_servers
from qwen3tts.settings import Settings
from qwen3tts.text import reload_lexicon, warm_up

log = logging.getLogger(__name__)

STATUS_INTERVAL_S = 30.0
DRAIN_TIMEOUT_S = 45.0


class Service:
    """Owns every component; `start()` then `wait()` until `stop()` (from a signal handler).

    `runtime` and `sink` may be given (tests: the real Engine over a fake runner, a null sink);
    otherwise they come from the settings. `exit_code` turns 1 when a worker kept failing.
    """

    def __init__(
        self,
        settings: Settings,
        notifier: Notifier | None = None,
        config_path: Path | None = None,
        *,
        runtime=None,
        sink=None,
    ):
        self.settings = settings
        self.config_path = config_path
        self.notifier = notifier or Notifier()
        self.heartbeats = Heartbeats()
        self.supervisor = Supervisor(on_fatal=self._fatal)
        self.exit_code = 0
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._intake_stop = threading.Event()
        self._status_dirty = threading.Event()
        self._sink_state = "ok"
        self._counts = {"rejected": 0, "error": 0}  # for /metrics; read by the servers' thread
        self.runtime = runtime
        self.sink = sink
        self.mqtt: MqttClient | None = None
        self.watchdog: Watchdog | None = None

    # ---- start ----

    def start(self) -> None:
        settings = self.settings
        if self.runtime is None:
            self.notifier.status("loading bundle and compiling graphs")
            with ExtendStartTimeout(self.notifier):
                from qwen3tts.runtime.loader import load_runtime

                self.runtime = load_runtime(settings.model.bundle, settings, heartbeat=self._beat("engine"))
        engine, spec = self.runtime.engine, self.runtime.spec
        if self.sink is None:
            self.sink = open_sink(settings.audio, on_state=self._on_sink_state)
        lexicon = reload_lexicon(settings.text.lexicon, None)
        self.text = TextOptions(settings.text.normalize, lexicon, tuple(spec.languages))
        warm_up(spec.languages)  # the language detector, so the first `auto` announcement does not wait
        self.voices = RegisteredVoices()
        builder = getattr(self.runtime, "prompt_builder", None)  # None: a runtime test double
        self.catalog = VoiceCatalog(spec.speakers, spec.languages, self.voices, builder)
        self.catalog.load(settings)
        self.announcements = AnnouncementQueue(
            settings.announcements.spool_dir,
            max_queue=settings.announcements.max_queue,
            max_attempts=settings.announcements.max_attempts,
            on_change=lambda: self.announcer.wake(),
        )
        self.playback = Playback(
            self.sink,
            settings.audio,
            ChimeSet.from_settings(settings.audio),
            heartbeat=self._beat("audio"),
            on_end=lambda: self.announcer.wake(),
        )
        self.announcer = Announcer(
            settings,
            self.announcements,
            engine,
            self.playback,
            self._publish,
            self.catalog.default_voice(settings.voice),
            heartbeat=self._beat("announcer"),
            on_change=self._status_dirty.set,
            text=self.text,
            voices=self.voices,
            replay=PhraseReplay.from_settings(settings, engine, self.voices),
        )
        self.thermal = None
        if settings.thermal.enabled:
            beat = self._beat("thermal")
            self.thermal = ThermalMonitor(settings.thermal, engine, self._on_thermal, heartbeat=beat)
        engine.start()
        bundle_info = BundleInfo.from_spec(settings.model.bundle.name, spec, settings.voice, self.voices)
        self.servers = start_servers(settings, engine, bundle_info, self._figures, text=self.text)
        self.supervisor.start("audio", self.playback.run, self._fail_track)
        self.notifier.ready(f"ready; bundle={settings.model.bundle.name}; plan={self.runtime.plan.summary()}")
        log.info(
            "ready: %s %s bundle with %s weights, devices %s, sink %s",
            spec.size,
            spec.variant,
            weights_kind(self.runtime.manifest),
            self.runtime.plan.summary(),
            self.sink.name,
        )
        self._start_mqtt(replay_spool=True)
        self.supervisor.start("announcer", self.announcer.run, self.announcer.fail_handling)
        if self.thermal is not None:
            self.thermal.start()
        self.watchdog = Watchdog(self.notifier, self.heartbeats)
        self.watchdog.start()
        self.supervisor.start("status", self._status_loop)

    def _start_mqtt(self, replay_spool: bool) -> None:
        """Connect with the current MQTT settings; the spool is replayed once per process, not per reload."""
        spec, settings = self.runtime.spec, self.settings
        inbound: queue.Queue = queue.Queue()
        self.mqtt = MqttClient(settings.mqtt, on_inbound=inbound.put)
        topics = self.mqtt.topics
        policy = AnnouncementPolicy.from_settings(
            settings.announcements,
            max_text_chars=settings.engine.max_text_chars,
            voices=self.catalog.names,
            languages=tuple(spec.languages),
            supports_instruct=spec.supports_instruct,
        )
        previous = getattr(self, "intake", None)
        self.intake = AnnouncementIntake(
            self.announcements,
            policy,
            topics,
            ack=self.mqtt.ack,
            hermes_site_id=settings.mqtt.hermes_site_id,
            hermes_chime=settings.mqtt.hermes_chime,
            active_ids=lambda: [self.announcer.current_id] if self.announcer.current_id else [],
            discovery=(lambda: self.catalog.discovery(self.mqtt.topics)) if settings.mqtt.discovery else None,
            dedup_window=settings.announcements.dedup_window,
        )
        if previous is not None:
            self.intake.recent = previous.recent  # duplicate ids stay dropped across a reload
        if replay_spool:
            for message in self.intake.replay():
                self.mqtt.publish(message)
        intake_stop = self._intake_stop = threading.Event()
        self.supervisor.start("intake", lambda stop: self._intake_loop(inbound, intake_stop, stop))
        self.mqtt.start()
        self._publish_voices()
        self._status_dirty.set()

    # ---- workers ----

    def _intake_loop(self, inbound: queue.Queue, mine: threading.Event, stop: threading.Event) -> None:
        beat = self._beat("mqtt")
        while not (stop.is_set() or mine.is_set()):
            beat()
            try:
                item = inbound.get(timeout=0.2)
            except queue.Empty:
                continue
            result = self.intake.handle(item)  # never raises; acks after the spool fsync
            for message in result.publish:
                self._publish(message)
            for command in result.commands:
                apply_control(command, announcer=self.announcer, playback=self.playback, catalog=self.catalog)
            self._status_dirty.set()

    def _status_loop(self, stop: threading.Event) -> None:
        last = 0.0
        while not stop.is_set():
            self._status_dirty.wait(1.0)
            if self._status_dirty.is_set() or time.monotonic() - last > STATUS_INTERVAL_S:
                self._status_dirty.clear()
                last = time.monotonic()
                self._publish_status()

    def _fail_track(self, exc: BaseException) -> str | None:
        """The audio thread crashed: the track it played ends in error, the announcer fails it."""
        track = self.playback.current
        self.playback.current = None
        if track is None:
            return None
        track.error = f"{type(exc).__name__}: {exc}"
        track.t_ended = time.time()
        self.announcer.wake()
        return track.label

    # ---- status ----

    def status(self) -> Status:
        return build_status(
            stopping=self._stopping.is_set(), queue_depth=len(self.announcements), announcer=self.announcer,
            playback=self.playback, runtime=self.runtime, thermal=self.thermal,
            audio=f"{self.sink.name}:{self._sink_state}", bundle=str(self.settings.model.bundle),
        )  # fmt: skip

    def _publish_status(self) -> None:
        status = self.status()
        self._publish(status)
        thermal = self.thermal.decision.notify_status() if self.thermal and self.thermal.decision else ""
        self.notifier.status(f"{status.state}; queue={status.queue_depth}; {thermal}".rstrip("; "))

    def _on_thermal(self, level: str, batch: int, reason: str) -> None:
        self._status_dirty.set()  # the thermal monitor logs the change itself

    def _on_sink_state(self, state: str, detail: str) -> None:
        self._sink_state = state
        log.log(logging.INFO if state == "ok" else logging.WARNING, "audio device %s: %s", state, detail)
        self._status_dirty.set()

    # ---- reload and stop ----

    def reload(self) -> None:
        """SIGHUP (reload.py): topics from the config file; voice and volume only where the file changed
        them, so a volume or voice set over MQTT survives a reload that did not touch it."""
        fresh = read_settings(self.config_path, self.settings)
        if fresh is None:
            return
        old, self.settings = self.settings, fresh
        voice = self.announcer.voice
        carry_changes(old, fresh, self.playback, voice, self.text, self.runtime.spec.speakers)
        voices_changed = self.catalog.load(fresh)
        topics_changed = fresh.mqtt != old.mqtt
        if topics_changed and self.mqtt is not None:
            log.info("reload: MQTT settings changed, reconnecting")
            self._intake_stop.set()
            self.mqtt.stop()
            self._start_mqtt(replay_spool=False)
        elif voices_changed and self.mqtt is not None:  # the intake, topic and HA follow
            self.intake.policy = dataclasses.replace(self.intake.policy, voices=self.catalog.names)
            self._publish_voices()
        log.info("reloaded: volume %.2f, voice %s, MQTT %s", self.playback.volume, voice.voice,
                 "reconnected" if topics_changed else "unchanged")  # fmt: skip
        self._status_dirty.set()

    def stop(self) -> None:
        """Stop accepting, finish or cut what plays, say offline; safe to call once from any thread,
        also before start() completed.

        Every wait is bounded: a wedged worker is left behind (its thread is a daemon).
        """
        if self._stopping.is_set():
            return
        self._stopping.set()
        self.notifier.stopping()
        finish = self.settings.announcements.on_shutdown == "finish"
        log.info("stopping (%s the current announcement)", "finishing" if finish else "cutting")
        self._intake_stop.set()
        announcer = getattr(self, "announcer", None)
        if announcer is not None and not announcer.drain(finish=finish, timeout=DRAIN_TIMEOUT_S):
            log.error("the current announcement did not end within %.0f s; stopping anyway", DRAIN_TIMEOUT_S)
        self.supervisor.stop(timeout=5)
        if getattr(self, "thermal", None) is not None:
            self.thermal.stop()
        if getattr(self, "servers", None) is not None:
            self.servers.stop()
        if self.runtime is not None:
            self.runtime.engine.stop(timeout=5)
        if self.watchdog is not None:
            self.watchdog.stop()
        if self.mqtt is not None:
            self._publish_status()
            self.mqtt.stop()
        if self.sink is not None:
            self.sink.close()
        log.info("stopped")
        self._stopped.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    def _fatal(self, worker: str) -> None:
        """A worker keeps failing: stop (bounded) and let the process exit non-zero for systemd."""
        self.exit_code = 1
        threading.Thread(target=self.stop, name="fatal-stop").start()

    # ---- helpers ----

    def _publish(self, message) -> None:
        """Publish one outbound message; one that cannot be sent (a payload MQTT cannot carry, a
        response topic with a wildcard) is dropped with a log line: it must not fail the worker."""
        kind = getattr(message, "event", None)
        if kind in ("rejected", "error"):
            self._counts[kind] += 1
        if self.mqtt is None:
            return
        try:
            self.mqtt.publish(message)
        except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
            log.warning("dropped an outbound %s: %s: %s", type(message).__name__, type(exc).__name__, exc)

    def _figures(self) -> ApplianceFigures:
        """/metrics and /healthz: called on the servers' thread, reads only."""
        return appliance_figures(
            queue_depth=len(self.announcements), playback=self.playback, thermal=self.thermal,
            sink_state=self._sink_state, counts=self._counts,
        )  # fmt: skip

    def _beat(self, name: str):
        self.heartbeats.register(name)
        return lambda: self.heartbeats.beat(name)

    def _publish_voices(self) -> None:
        """The retained `voices` topic and Home Assistant's entities (its voice select lists them all)."""
        for message in self.catalog.messages(self.mqtt.topics, discovery=self.settings.mqtt.discovery):
            self.mqtt.publish(message)
