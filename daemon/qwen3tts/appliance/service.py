"""The daemon: MQTT -> durable queue -> engine -> audio, supervised, with the systemd lifecycle.

Threads: the MQTT network loop (paho), the intake (validate, spool, ack), the engine step loop, the
player (announcements -> engine -> audio), the audio thread, the thermal monitor, the watchdog.
Each posts heartbeats; WATCHDOG=1 goes out only while all of them are alive.
Start order: bundle compiled and sink open -> READY=1 (not gated on the broker) -> MQTT.
SIGTERM: STOPPING=1, stop accepting, finish or cut the current announcement, `offline`, exit 0.
SIGHUP: reload voice, volume and topic settings without touching the queue.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path

from qwen3tts import __version__
from qwen3tts.appliance.alsa import open_sink
from qwen3tts.appliance.audio_worker import AudioWorker
from qwen3tts.appliance.chimes import ChimeSet
from qwen3tts.appliance.discovery import discovery_configs
from qwen3tts.appliance.events import Status, Voices
from qwen3tts.appliance.intake import AnnouncementIntake, AnnouncementPolicy
from qwen3tts.appliance.messages import SetVoice, SetVolume, Stop
from qwen3tts.appliance.mqtt import MqttClient
from qwen3tts.appliance.notify import Heartbeats, Notifier, Watchdog
from qwen3tts.appliance.playback import Playback
from qwen3tts.appliance.player import Player, Voice
from qwen3tts.appliance.queue import AnnouncementQueue
from qwen3tts.appliance.thermal import ThermalMonitor
from qwen3tts.model.bundle import weights_kind
from qwen3tts.settings import Settings

log = logging.getLogger(__name__)

STATUS_INTERVAL_S = 30.0


class Service:
    """Owns every component; `start()` then `wait()` until `stop()` (from a signal handler)."""

    def __init__(self, settings: Settings, notifier: Notifier | None = None, config_path: Path | None = None):
        self.settings = settings
        self.config_path = config_path
        self.notifier = notifier or Notifier()
        self.heartbeats = Heartbeats()
        self._stopped = threading.Event()
        self._intake_stop = threading.Event()
        self._status_dirty = threading.Event()
        self._sink_state = "ok"
        self.runtime = None
        self.mqtt: MqttClient | None = None

    # ---- start ----

    def start(self) -> None:
        settings = self.settings
        self.notifier.status("loading bundle and compiling graphs")
        with _ExtendStartTimeout(self.notifier):
            from qwen3tts.runtime.loader import load_runtime

            self.runtime = load_runtime(settings.model.bundle, settings, heartbeat=self._beat("engine"))
        spec = self.runtime.spec
        self.sink = open_sink(settings.audio, on_state=self._on_sink_state)
        self.playback_events: queue.Queue = queue.Queue()
        self.playback = Playback(
            self.sink,
            settings.audio,
            ChimeSet.from_settings(settings.audio),
            on_event=self.playback_events.put,
            clock=time.time,
        )
        self.audio = AudioWorker(self.playback, heartbeat=self._beat("audio"))
        self.announcements = AnnouncementQueue(
            settings.announcements.spool_dir, max_queue=settings.announcements.max_queue
        )
        self.player = Player(
            settings,
            self.announcements,
            self.runtime.engine,
            self.audio,
            self._publish,
            self._voice_from(settings),
            self.playback_events,
            heartbeat=self._beat("player"),
            on_change=self._status_dirty.set,
        )
        self.thermal = None
        if settings.thermal.enabled:
            self.thermal = ThermalMonitor(
                settings.thermal, self.runtime.engine, self._on_thermal, heartbeat=self._beat("thermal")
            )
        self.runtime.engine.start()
        self.audio.start()
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
        self.player.start()
        if self.thermal is not None:
            self.thermal.start()
        self.watchdog = Watchdog(self.notifier, self.heartbeats)
        self.watchdog.start()
        threading.Thread(target=self._status_loop, name="status", daemon=True).start()

    def _start_mqtt(self, replay_spool: bool) -> None:
        """Connect with the current MQTT settings; the spool is replayed once per process, not per reload."""
        spec, settings = self.runtime.spec, self.settings
        inbound: queue.Queue = queue.Queue()
        self.mqtt = MqttClient(settings.mqtt, on_inbound=inbound.put)
        topics = self.mqtt.topics
        policy = AnnouncementPolicy.from_settings(
            settings.announcements,
            max_text_chars=settings.engine.max_text_chars,
            voices=tuple(spec.speakers),
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
            active_ids=lambda: [self.player.current_id] if self.player.current_id else [],
            discovery=self._discovery if settings.mqtt.discovery else None,
            dedup_window=settings.announcements.dedup_window,
        )
        if previous is not None:
            self.intake.recent = previous.recent  # duplicate ids stay dropped across a reload
        if replay_spool:
            for message in self.intake.replay():
                self.mqtt.publish(message)
        self._intake_stop = threading.Event()
        threading.Thread(
            target=self._intake_loop, args=(inbound, self._intake_stop), name="intake", daemon=True
        ).start()
        self.mqtt.start()
        for message in [
            Voices(voices=tuple(spec.speakers), languages=tuple(spec.languages)),
            *(self._discovery() if settings.mqtt.discovery else []),
        ]:
            self.mqtt.publish(message)
        self._status_dirty.set()

    def _discovery(self):
        return discovery_configs(
            self.mqtt.topics, voices=tuple(self.runtime.spec.speakers), sw_version=__version__
        )

    # ---- threads ----

    def _intake_loop(self, inbound: queue.Queue, stop: threading.Event) -> None:
        beat = self._beat("mqtt")
        while not stop.is_set():
            beat()
            try:
                item = inbound.get(timeout=0.2)
            except queue.Empty:
                continue
            result = self.intake.handle(item)  # never raises; acks after the spool fsync
            for message in result.publish:
                self._publish(message)
            for command in result.commands:
                self._apply(command)
            self._status_dirty.set()

    def _status_loop(self) -> None:
        last = 0.0
        while not self._stopped.is_set():
            self._status_dirty.wait(1.0)
            if self._status_dirty.is_set() or time.monotonic() - last > STATUS_INTERVAL_S:
                self._status_dirty.clear()
                last = time.monotonic()
                self._publish_status()

    def _apply(self, command) -> None:
        if isinstance(command, Stop):
            if command.scope == "all":
                self.player.stop_all()
            elif command.scope == "id" and command.id:
                self.player.stop_id(command.id)
            else:
                self.player.stop_current()
        elif isinstance(command, SetVolume):
            self.playback.volume = command.volume
            log.info("volume set to %.2f", command.volume)
        elif isinstance(command, SetVoice):
            if command.voice.lower() in self.runtime.spec.speakers:
                self.player.voice.voice = command.voice.lower()
                log.info("default voice set to %s", command.voice)
            else:
                log.warning("voice/set: unknown voice %r ignored", command.voice)

    # ---- status ----

    def status(self) -> Status:
        stats = self.runtime.engine.stats()
        decision = self.thermal.decision if self.thermal is not None else None
        current = self.player.current_id
        return Status(
            state="speaking" if current else ("idle" if not self._stopped.is_set() else "stopping"),
            queue_depth=len(self.announcements),
            current_id=current,
            batch_limit=stats.max_batch,
            thermal_level=decision.level_name if decision else "cool",
            temperature_c=decision.temperature_c if decision else None,
            volume=self.playback.volume,
            voice=self.player.voice.voice or "",
            device_plan={**self.runtime.plan.summary(), "audio": f"{self.sink.name}:{self._sink_state}"},
            bundle=str(self.settings.model.bundle),
            weights=weights_kind(self.runtime.manifest),
        )

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
        """SIGHUP: voice, volume and topics from the config file; the queue and the engine stay."""
        from qwen3tts.settings_loader import load_settings

        try:
            fresh = load_settings(self.config_path) if self.config_path else self.settings
        except Exception:
            log.exception("reload: keeping the old settings")
            return
        self.player.voice = self._voice_from(fresh)
        self.playback.volume = fresh.audio.volume
        self.playback.muted = fresh.audio.muted
        topics_changed = fresh.mqtt != self.settings.mqtt
        self.settings = fresh
        if topics_changed and self.mqtt is not None:
            log.info("reload: MQTT settings changed, reconnecting")
            self._intake_stop.set()
            self.mqtt.stop()
            self._start_mqtt(replay_spool=False)
        log.info("reloaded voice, volume and MQTT settings")
        self._status_dirty.set()

    def stop(self) -> None:
        """Stop accepting, finish or cut what plays, say offline; safe to call once from any thread."""
        if self._stopped.is_set():
            return
        self.notifier.stopping()
        log.info("stopping (%s the current announcement)", self.settings.announcements.on_shutdown)
        self._intake_stop.set()
        self.player.stop_accepting()
        self.audio.stop(finish_current=self.settings.announcements.on_shutdown == "finish", timeout=45)
        self.player.stop()
        self._stopped.set()
        if self.thermal is not None:
            self.thermal.stop()
        self.runtime.engine.stop()
        self.watchdog.stop()
        if self.mqtt is not None:
            self._publish_status()
            self.mqtt.stop()
        self.sink.close()
        log.info("stopped")

    def wait(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    # ---- helpers ----

    def _publish(self, message) -> None:
        if self.mqtt is not None:
            self.mqtt.publish(message)

    def _beat(self, name: str):
        self.heartbeats.register(name)
        return lambda: self.heartbeats.beat(name)

    def _voice_from(self, settings: Settings) -> Voice:
        speakers = self.runtime.spec.speakers
        voice = settings.voice.voice or (next(iter(speakers)) if speakers else None)
        # The bundle's spelling, so status.voice is one of the Home Assistant select's options.
        voice = next((s for s in speakers if voice and s.lower() == voice.lower()), voice)
        return Voice(voice=voice, language=settings.voice.language, instruct=settings.voice.instruct or None)


class _ExtendStartTimeout:
    """Keeps asking systemd for 30 s more while a long first compile runs (EXTEND_TIMEOUT_USEC)."""

    def __init__(self, notifier: Notifier, every_s: float = 10.0, extend_s: float = 30.0):
        self.notifier, self.every_s, self.extend_s = notifier, every_s, extend_s
        self._done = threading.Event()

    def __enter__(self):
        self.notifier.extend_timeout(self.extend_s)
        threading.Thread(target=self._run, name="extend-timeout", daemon=True).start()
        return self

    def _run(self) -> None:
        while not self._done.wait(self.every_s):
            self.notifier.extend_timeout(self.extend_s)

    def __exit__(self, *exc) -> bool:
        self._done.set()
        return False
