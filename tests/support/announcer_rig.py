"""The speech half of the appliance in one process, with its real threads: announcer -> real Engine ->
playback -> sink.

The engine is the real `Engine`, over the fake runner (tests/support/engine_fakes.py) or a real
runtime; the announcer and the audio thread run under the real `Supervisor`. Events the announcer
emits are recorded, and `wait_for` waits on a condition the recorder notifies (no polling). Sampling is
greedy, so a piece's PCM is the same in every run and tests can compare what the sink played against
each piece synthesised alone. For tests of the announcer's decisions drive `Announcer.turn()` instead
(announcer_fakes.py: `TurnRig`, no threads); this rig is for the hand-offs between the threads.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from audio_fakes import FakeSink
from engine_fakes import FakeRunner, fake_prompt_builder

from qwen3tts.appliance.announcements.announcer import Announcer
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.say_reader import admit
from qwen3tts.appliance.priority import Priority
from qwen3tts.appliance.systemd.supervisor import Supervisor
from qwen3tts.engine.config import EngineConfig, SamplingParams
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Request
from qwen3tts.settings import AnnouncementSettings, AudioSettings, Settings
from qwen3tts.synthesis import SpeechDefaults, TextOptions, frame_budget, read_text
from qwen3tts.voices.catalog import VoiceCatalog

SAMPLES_PER_FRAME = 1920  # 80 ms at 24 kHz, like the real codec


@dataclass
class LoudRunner(FakeRunner):
    """The fake runner with real-sized frames: each fake sample is held for 480 samples."""

    eos_at: int = 24

    def codec_decode(self, seq_id: int, frames: np.ndarray, final: bool = False) -> np.ndarray:
        return np.repeat(super().codec_decode(seq_id, frames, final), SAMPLES_PER_FRAME // 4)


def rig_settings(tmp_path, **announcements) -> Settings:
    audio = AudioSettings(
        lead_in_ms=0, tail_ms=0, fade_ms=0, block_ms=40, jitter_buffer_ms=0,
        chime_normal="none", chime_priority="none", chime_emergency="none",
    )  # fmt: skip
    return Settings(
        announcements=AnnouncementSettings(spool_dir=tmp_path / "spool", **announcements), audio=audio
    )


def fake_engine(runner: FakeRunner | None = None, max_num_seqs: int = 4) -> Engine:
    runner = runner or LoudRunner()
    # Prefix caching off: the fake runner's KV check assumes one owner per block (FakeRunner.shared_kv);
    # the 4-frame first chunk is what these tests were written against.
    config = EngineConfig(
        max_num_seqs=max_num_seqs,
        sampling=SamplingParams(greedy=True),
        first_chunk_frames=4,
        enable_prefix_caching=False,
    )
    return Engine(runner, fake_prompt_builder(runner.hidden_size), config)


def fake_runtime(speakers: tuple[str, ...] = ("ryan", "vivian")) -> SimpleNamespace:
    """What the Service takes as its loaded runtime: the real Engine over the fake runner, a 0.6B spec."""
    return SimpleNamespace(
        engine=fake_engine(),
        spec=SimpleNamespace(
            speakers=speakers,
            languages=("english",),
            size="0.6b",
            variant="custom_voice",
            supports_instruct=False,
        ),
        plan=SimpleNamespace(summary=lambda: {"talker": "CPU"}, decode_paths=lambda: {"talker": "plugin"}),
        manifest=SimpleNamespace(random_weights=True),
    )


@dataclass
class RigSink(FakeSink):
    """FakeSink that tells plays apart: the n-th play of `id` is recorded as item `id@n` (from 0)."""

    plays: dict[str, int] = field(default_factory=dict)

    def begin(self, item_id: str) -> None:
        n = self.plays.get(item_id, 0)
        self.plays[item_id] = n + 1
        super().begin(f"{item_id}@{n}")

    def speech(self, item_id: str, play: int = 0) -> np.ndarray:
        """Samples of one play without the silence written while waiting for PCM."""
        out = self.played(f"{item_id}@{play}")
        return out[out != 0]

    def order(self) -> list[str]:
        return [item for kind, item, _ in self.events if kind == "begin"]


@dataclass
class GatedSink(RigSink):
    """Holds the audio thread inside `write()` once the play `item` (`id@n`) has had `after` samples of
    speech: `reached` is set and the write returns only when the test sets `release`. The test then
    knows exactly where playback stands while it acts from its own thread."""

    item: str = ""
    after: int = 0
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def write(self, block: np.ndarray) -> bool:
        underflow = super().write(block)
        if self._item == self.item and not self.reached.is_set():
            spoken = self.played(self.item)
            if np.count_nonzero(spoken) >= self.after:
                self.reached.set()
                if not self.release.wait(60):
                    raise AssertionError("the test never released the audio thread")
        return underflow


def slow_sink(real_delay_s: float = 0.002) -> RigSink:
    """A sound card that plays 40 ms blocks in `real_delay_s` (20x real time by default)."""
    return RigSink(paced=True, real_delay_s=real_delay_s)


class EventLog:
    """What the announcer emitted, as (id, event, reason) in order; waiters are woken on every event."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, str]] = []
        self.warnings: list[tuple[str, str, tuple[str, ...]]] = []
        """(id, event, warnings) of every event, in order."""
        self.announcements: list = []
        self._cond = threading.Condition()

    def __call__(self, ann, event: str, reason: str, warnings: tuple[str, ...], play=None, **zones) -> None:
        with self._cond:
            self.entries.append((ann.id, event, reason))
            self.warnings.append((ann.id, event, tuple(warnings)))
            self.announcements.append(ann)
            self._cond.notify_all()

    def wait_until(self, condition, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(condition, timeout)


@dataclass
class Rig:
    tmp_path: object
    settings: Settings
    engine: Engine
    sink: object = field(default_factory=RigSink)
    heartbeat: object = None
    replay: object = None
    """A PhraseReplay for phrase cache tests; None synthesises every play."""
    log: EventLog = field(default_factory=EventLog)
    fatal: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        beat = self.heartbeat or (lambda name: None)
        self.queue = AnnouncementQueue(
            self.settings.announcements.spool_dir, max_attempts=self.settings.announcements.max_attempts
        )
        chimes = ChimeSet({"normal": None, "priority": None, "emergency": None})
        self.playback = Playback(
            self.sink, self.settings.audio, chimes,
            heartbeat=lambda: beat("audio"), on_end=lambda: self.announcer.wake(),
        )  # fmt: skip
        self.catalog = VoiceCatalog(("ryan",), ())
        defaults = SpeechDefaults("ryan", "auto", None)
        self.lookahead = LookAhead(
            self.engine, self.settings, defaults, TextOptions(), self.catalog, self.replay
        )
        self.announcer = Announcer(
            self.settings, self.queue, self.lookahead, self.playback, self.log,
            heartbeat=lambda: beat("announcer"),
        )  # fmt: skip
        self.supervisor = Supervisor(on_fatal=self.fatal.append, backoff_s=0.01)

    def start(self) -> Rig:
        self.engine.start()
        self.supervisor.start("audio", self.playback.run)
        self.supervisor.start("announcer", self.announcer.run)
        return self

    def close(self) -> None:
        self.announcer.drain(finish=False, timeout=5)
        self.supervisor.stop(timeout=5)
        self.engine.stop()

    # ---- driving ----

    def say(self, ann_id: str, text: str, **fields):
        if isinstance(fields.get("priority"), str):
            fields["priority"] = Priority.announcement_level(fields["priority"])
        ann = admit(AnnouncementPolicy(), time.time(), text=text, id=ann_id, **fields)
        self.announcer.enqueue(ann)
        return ann

    def events(self, ann_id: str | None = None) -> list[tuple[str, str]]:
        return [
            (event, reason) for i, event, reason in list(self.log.entries) if ann_id is None or i == ann_id
        ]

    def kinds(self, ann_id: str) -> list[str]:
        return [kind for kind, _ in self.events(ann_id)]

    def wait_for(self, ann_id: str, kind: str, count: int = 1, timeout: float = 30.0) -> None:
        if not self.log.wait_until(lambda: self.kinds(ann_id).count(kind) >= count, timeout):
            raise AssertionError(f"{ann_id}: no {kind} #{count} within {timeout} s; {self.events()}")

    def sentence_pcm(self, text: str, cursor: int = 0) -> list[np.ndarray]:
        """Each piece of `text` synthesised alone (greedy: the same PCM the announcer gets)."""
        out = []
        for i, piece in enumerate(read_text(text, "auto", TextOptions())[0][cursor:]):
            max_frames = frame_budget(piece, self.settings.engine.max_frames)
            request = Request(id=f"alone-{threading.get_ident()}-{i}", text=piece, speaker="ryan",
                              language="auto", max_frames=max_frames)  # fmt: skip
            out.append(self.engine.submit(request).result(timeout=30))
        return out


def start_subscribed(service, timeout: float = 60.0) -> None:
    """Start an in-process daemon and return once the broker routes its topics to it: its MQTT client
    connects on its own thread, so a `say` published before that would be lost (not the daemon's fault)."""
    service.start()
    assert service.mqtt is not None and service.mqtt.client.wait_connected(timeout), "never subscribed"
