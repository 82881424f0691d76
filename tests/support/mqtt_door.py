"""The MQTT door wired as the daemon wires it: the real Intake handing over to the real Announcer.

`MqttDoor` drives both on the test's thread, no threads and no sleeps: `send()` is one message through
`Intake.handle()` followed by one `Announcer.turn()`, which applies the hand-over (spool, duplicate
memory, ack, answer). Everything both publish is collected in order, the announcer's events turned into
MQTT messages with `announcement_events()` as the service does. Nothing is synthesised: the engine (the
real one over the fake runner) is never started and `HeldPlayback` only keeps the track it was handed, so
the first announcement becomes the playing one and stays so while the others wait in the queue.

`build_announcer()` is the same wiring for the threaded runner
(tests/integration/appliance/mqtt_intake_runner.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from announcer_rig import fake_engine

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.announcer import Announcer
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.audio.track import Track
from qwen3tts.appliance.audio.track_reader import TrackReader
from qwen3tts.appliance.mqtt.answers import announcement_events
from qwen3tts.appliance.mqtt.events import Event
from qwen3tts.appliance.mqtt.intake import Intake
from qwen3tts.appliance.mqtt.messages import Inbound, Message
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.topics import Topics
from qwen3tts.engine.engine import Engine
from qwen3tts.settings import AnnouncementSettings, AudioSettings, Settings
from qwen3tts.steady_clock import SteadyClock
from qwen3tts.synthesis import SpeechDefaults, TextOptions
from qwen3tts.text import warm_up
from qwen3tts.voices.catalog import VoiceCatalog

NOW = 1_000_000.0
VOICES = ("ryan", "vivian")
LANGUAGES = ("english", "german")
ABSOLUTE_TOPICS = ("hermes/", "rhasspy/", "homeassistant/", "ha/", "qwen3tts/")
ZONE_SAY = "qwen3tts/zone/default/say"
"""The zone topic of the door's one zone (`default`, the announcer's only playback)."""


def policy_for(voices=VOICES, languages=LANGUAGES, **limits) -> AnnouncementPolicy:
    return AnnouncementPolicy(catalog=VoiceCatalog(voices, languages), **limits)


def appliance_settings(spool_dir: Path, **announcements) -> Settings:
    """Settings with the spool in `spool_dir` and audio without chimes, lead-in or fades."""
    audio = AudioSettings(
        lead_in_ms=0, tail_ms=0, fade_ms=0, block_ms=40, jitter_buffer_ms=0,
        chime_normal="none", chime_priority="none", chime_emergency="none",
    )  # fmt: skip
    announcement_settings = AnnouncementSettings(spool_dir=Path(spool_dir), **announcements)
    return Settings(announcements=announcement_settings, audio=audio)


def build_announcer(
    settings: Settings,
    engine: Engine,
    playback,
    on_event,
    *,
    catalog: VoiceCatalog,
    max_queue: int = 100,
    clock: Callable[[], float] = time.time,
) -> Announcer:
    """The announcer as the service builds it: durable queue, look-ahead over `engine`, `playback`."""
    announcements = settings.announcements
    queue = AnnouncementQueue(
        announcements.spool_dir,
        max_queue=max_queue,
        max_attempts=announcements.max_attempts,
        dedup_window=announcements.dedup_window,
    )
    text = TextOptions()
    warm_up(text.languages)  # as the service does: the first text read does not wait for the detector
    lookahead = LookAhead(engine, settings, SpeechDefaults("ryan", "auto", None), text, catalog)
    return Announcer(settings, queue, lookahead, playback, on_event, clock=clock)


def replay_spool(announcer: Announcer) -> None:
    """What the announcer does first when its thread starts: `run()` replays the spool before its first
    turn; with its stop event already set it does only that."""
    stopped = threading.Event()
    stopped.set()
    announcer.run(stopped)


class HeldPlayback:
    """Playback that plays nothing: it keeps each track the announcer hands over (`play_next`).

    `end_tracks()` does what the audio thread does at the end of a track: a cut track ends where it was
    cut, any other one played out.
    """

    def __init__(self) -> None:
        self.tracks: list[Track] = []

    def play_next(self, track: Track) -> None:
        self.tracks.append(track)

    def end_tracks(self, t: float) -> None:
        for track in self.tracks:
            if not track.ended:
                TrackReader(track).finished(t, played_out=not track.is_cut)


class MqttDoor:
    """Intake + announcer on one spool directory, driven one message and one turn at a time."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        policy: AnnouncementPolicy | None = None,
        topics: Topics | None = None,
        max_queue: int = 100,
        discovery: Callable[[], list[Message]] | None = None,
        hermes_chime: bool = False,
        zones: tuple[str, ...] = ("default",),
        **announcement_settings,
    ) -> None:
        self.now = NOW
        self.base = (topics or Topics("qwen3tts/hall")).base
        # the policy's deadlines on the door's clock (a step-free time line of its own, steady_clock.py)
        self.policy = replace(
            policy or policy_for(zones=("default",)), timeline=SteadyClock(self.clock, self.clock)
        )
        self.settings = appliance_settings(tmp_path / "spool", **announcement_settings)
        self.published: list[Message] = []
        self.events: list[tuple[Announcement, str, str]] = []
        """What the announcer emitted: (announcement, event, reason)."""
        self.acks: list[tuple[str, list[str]]] = []
        """(name of the acknowledged message, spool files when its ack went out)."""
        self.playback = HeldPlayback()
        catalog = self.policy.catalog
        playbacks = self.playback if zones == ("default",) else {zone: self.playback for zone in zones}
        self.announcer = build_announcer(self.settings, fake_engine(), playbacks, self._on_event,
                                         catalog=catalog, max_queue=max_queue, clock=self.clock)  # fmt: skip
        self.queue = self.announcer.queue
        topics = topics or Topics(self.base, hermes=True, zone_base="qwen3tts/zone", zones=("default",))
        self.intake = Intake(self.announcer, self.policy, topics,
                             self.published.append, discovery=discovery, hermes_chime=hermes_chime,
                             clock=self.clock)  # fmt: skip

    def clock(self) -> float:
        return self.now

    def _on_event(
        self, ann: Announcement, event: str, reason: str, warnings: tuple[str, ...], **zones
    ) -> None:
        self.events.append((ann, event, reason))
        self.published.extend(announcement_events(ann, event, reason, self.now, warnings, **zones))

    # ---- driving ----

    def inbound(self, payload: str | bytes, topic: str = "say", *, name: str = "tok", **fields) -> Inbound:
        """An inbound message on `<base>/<topic>`, or on `topic` itself when it is not one of ours
        (`hermes/tts/say`, `homeassistant/status`); its ack is recorded under `name`."""
        data = payload.encode() if isinstance(payload, str) else payload
        full = topic if topic.startswith(ABSOLUTE_TOPICS) else f"{self.base}/{topic}"
        return Inbound(full, data, ack=lambda: self.acks.append((name, self.spool_files())), **fields)

    def send(self, payload: str | bytes, topic: str = "say", **fields) -> list[Message]:
        """One message through the intake, then one announcer turn; what went out meanwhile."""
        return self.deliver(self.inbound(payload, topic, **fields))

    def deliver(self, inbound: Inbound) -> list[Message]:
        start = len(self.published)
        self.intake.handle(inbound)
        self.announcer.turn()
        return self.published[start:]

    def turn(self) -> list[Message]:
        start = len(self.published)
        self.announcer.turn()
        return self.published[start:]

    # ---- looking ----

    def spool_files(self) -> list[str]:
        return sorted(p.name for p in self.queue.spool.directory.glob("*.json"))

    def accepted(self) -> list[Announcement]:
        """Announcements the announcer queued, in the order it did."""
        return [ann for ann, event, reason in self.events if event == "queued" and not reason]

    def playing_id(self) -> str | None:
        return self.announcer.current_id


def events_in(messages: list[Message]) -> list[Event]:
    return [m for m in messages if isinstance(m, Event)]


def only_event(messages: list[Message]) -> Event:
    (event,) = events_in(messages)
    return event
