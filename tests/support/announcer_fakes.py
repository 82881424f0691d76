"""Driving `Announcer.turn()` by hand: no threads, no sleeps, every step decided by the test.

- `FakeEngine.submit()` returns a `FakeHandle` the test controls: its chunks become ready (`produce`),
  the request finishes (`finish`), fails (`fail`); `cancel()` is recorded. `stats()` reports a
  settable `max_batch`.
- `FakePlayback` (one per zone) records every `play_next(track)`; the test plays the zone's audio thread
  with `block()`: it starts the handed track, takes one block of samples through the zone's reader and
  writes `started` / `first_audio` / `finished` as `Playback.play` does (a cut ends it before the next
  block; `fail_next` makes the zone's output fail).
- `TurnRig` wires the real announcer, queue, spool and look-ahead to these fakes and a `FakeClock`, with
  one zone `default` or the `zones` given.

PCM stands in for speech: `fake_speech(text)` is a fixed function of the piece's text, so a test can
say which samples a track must hold (`expected_pcm`).
"""

from __future__ import annotations

import json
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from announcer_rig import rig_settings
from audio_fakes import FakeClock

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.announcer import Announcer
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.play import Play
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.audio.track import DEFAULT_ZONE, Track
from qwen3tts.appliance.audio.track_reader import TrackReader
from qwen3tts.appliance.priority import Priority
from qwen3tts.engine.config import EngineConfig, SamplingParams
from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.engine.stats import EngineStats
from qwen3tts.errors import RequestError
from qwen3tts.synthesis import SpeechDefaults, TextOptions, read_text
from qwen3tts.text.languages import MODEL_LANGUAGES
from qwen3tts.voices.catalog import VoiceCatalog

BLOCK = 960  # 40 ms at 24 kHz: one audio block, as rig_settings plays
FOUR = "Store notice, part one. Store notice, part two. Store notice, part three. Store notice, part four."


def fake_speech(text: str, samples: int = 2400) -> np.ndarray:
    """The PCM the fake engine makes for one piece: a fixed function of its text (0.1 s by default)."""
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return rng.uniform(0.05, 0.95, samples).astype(np.float32)  # never 0: silence is not speech


def pieces(text: str, language: str = "english") -> list[str]:
    """The pieces the announcer submits for `text` (the text front end's, as the model gets them)."""
    return read_text(text, language, TextOptions())[0]


def expected_pcm(text: str, start: int = 0, stop: int | None = None) -> np.ndarray:
    """What a track holds after pieces [start, stop) of `text`, each synthesised by `fake_speech`."""
    return np.concatenate([fake_speech(p) for p in pieces(text)[start:stop]])


class FakeHandle:
    """One submitted request; the test makes its chunks ready and ends it."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self._ready: deque[np.ndarray] = deque()
        self._ended = False
        self._error: str | None = None
        self._cancelled = False
        self._capped = False
        self.cancels = 0

    def __repr__(self) -> str:
        state = "live" if self.live else "cancelled" if self._cancelled else self._error or "ended"
        return f"FakeHandle({self.request.id!r}, {state})"

    @property
    def request_id(self) -> str:
        return self.request.id

    @property
    def live(self) -> bool:
        """Still running in the engine: neither finished, failed nor cancelled."""
        return not (self._ended or self._error or self._cancelled)

    # ---- the test's side ----

    def produce(self, *chunks: np.ndarray) -> FakeHandle:
        self._ready.extend(np.asarray(c, dtype=np.float32) for c in chunks)
        return self

    def finish(self, *chunks: np.ndarray) -> FakeHandle:
        """The last chunks are ready and the request ends (EOS)."""
        self.produce(*chunks)
        self._ended = True
        return self

    def speak(self, chunk_samples: int = 1200) -> FakeHandle:
        """Finish with `fake_speech` of the request's text, in chunks."""
        pcm = fake_speech(self.request.text)
        return self.finish(*np.split(pcm, range(chunk_samples, len(pcm), chunk_samples)))

    def run_away(self, *chunks: np.ndarray) -> FakeHandle:
        """End as the frame cap ends a request: the model never sampled end-of-speech."""
        self._capped = True
        return self.finish(*chunks)

    def fail(self, message: str) -> FakeHandle:
        self._error = message
        return self

    # ---- the engine Handle's side (what the announcer calls) ----

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def status(self) -> SequenceStatus:
        if self._cancelled:
            return SequenceStatus.FINISHED_CANCELLED
        if self._error is not None:
            return SequenceStatus.FINISHED_ERROR
        if not self._ended:
            return SequenceStatus.RUNNING
        return SequenceStatus.FINISHED_LENGTH if self._capped else SequenceStatus.FINISHED_STOPPED

    @property
    def frames(self) -> np.ndarray:
        """(n, 16) codes: as many frames as the request's cap when it ran away, else none."""
        return np.zeros(((self.request.max_frames or 0) if self._capped else 0, 16), dtype=np.int64)

    def cancel(self) -> bool:
        self.cancels += 1
        was_live = self.live
        self._cancelled = True
        return was_live

    def ready_chunks(self) -> tuple[list[np.ndarray], bool]:
        """Like `Handle.ready_chunks`: a cancelled stream ends at once without what it still held."""
        if self._cancelled:
            self._ready.clear()
            return [], True
        if self._error is not None:
            raise RequestError(self._error)
        chunks = list(self._ready)
        self._ready.clear()
        return chunks, self._ended


FAKE_RTF = 0.1
"""The fake engine's streams count as synthesised at ten times real time: a look-ahead piece may join."""


class FakeEngine:
    """Records every request; `refuse(request)` may return a reason to raise RequestError with."""

    def __init__(self, max_batch: int = 4) -> None:
        self.max_batch = max_batch
        self.handles: list[FakeHandle] = []
        self.refuse: Callable[[Request], str | None] = lambda request: None
        self.submit_error: Callable[[Request], Exception | None] = lambda request: None
        """An unexpected exception `submit` raises for a request (a bug below the announcer)."""
        self.config = EngineConfig(sampling=SamplingParams(greedy=True))
        self.most_live = 0
        self.decode_rate = 0.0
        """Frames per second its stats report while requests run (0: none measured, pace.py falls back)."""

    def submit(self, request: Request) -> FakeHandle:
        error = self.submit_error(request)
        if error is not None:
            raise error
        reason = self.refuse(request)
        if reason:
            raise RequestError(reason)
        handle = FakeHandle(request)
        self.handles.append(handle)
        self.most_live = max(self.most_live, len(self.live()))
        return handle

    def stats(self) -> EngineStats:
        return EngineStats(
            num_running=len(self.live()), num_waiting=0, num_kv_blocks_used=0, num_kv_blocks_free=0,
            frames_per_second=0.0, max_batch=self.max_batch, num_preemptions=0,
            decode_frames_per_second=self.decode_rate if self.live() else 0.0,
        )  # fmt: skip

    def live(self, ann_id: str | None = None) -> list[FakeHandle]:
        return [h for h in self.of(ann_id) if h.live]

    def of(self, ann_id: str | None = None) -> list[FakeHandle]:
        """Handles of one announcement (request ids are `<id>#<n>`), in submission order."""
        return [h for h in self.handles if ann_id is None or h.request_id.startswith(f"{ann_id}#")]

    def texts(self, ann_id: str | None = None) -> list[str]:
        return [h.request.text for h in self.of(ann_id)]

    def speak_all(self) -> int:
        """Finish every live request with its `fake_speech`; returns how many."""
        live = self.live()
        for handle in live:
            handle.speak()
        return len(live)


class FakePlayback:
    """Stands in for one zone's `Playback`: records the tracks handed over; `block()` plays one audio block
    through the zone's `TrackReader`, as the zone's audio thread does."""

    def __init__(self, clock: FakeClock, fade: int = 0, zone: str = DEFAULT_ZONE) -> None:
        self.clock = clock
        self.fade = fade
        self.zone = zone
        self.handed: list[Track] = []
        self.played: list[Track] = []
        """Tracks in the order the audio thread started them."""
        self.playing: Track | None = None
        self.fail_next: str | None = None
        """An output error the next track fails with in this zone (after its first block)."""
        self._next: Track | None = None
        self._reader: TrackReader | None = None
        self._heard: dict[int, list[np.ndarray]] = {}

    def play_next(self, track: Track) -> None:
        self.handed.append(track)
        self._next = track

    # ---- the audio thread's part, played by the test ----

    def block(self, n: int = BLOCK) -> int:
        """One block as `Playback.play` does it; returns the samples taken (0 while it waits for PCM)."""
        if self.playing is None:
            if self._next is None:
                return 0
            self.playing, self._next = self._next, None
            self._reader = TrackReader(self.playing, self.zone)
            self.played.append(self.playing)
            self._heard[id(self.playing)] = []
            self._reader.started(self.clock())
        track, reader = self.playing, self._reader
        if reader.is_cut:  # checked before every block: fade out what is held back, end unplayed
            self._hear(track, reader.take_now(self.fade))
            return self._end(reader, played_out=False)
        if reader.play.t_first_audio is None and not reader.ready(max(reader.start_threshold, n)):
            return 0  # holding speech back until the start threshold is buffered
        block, last = reader.take(n)
        taken = 0 if block is None else len(block)
        if taken:
            self._hear(track, block)
            reader.first_audio(self.clock())
        if self.fail_next is not None and taken:
            reader.failed(self.fail_next)
            self.fail_next = None
            return self._end(reader, played_out=False)
        if last:
            self._end(reader, played_out=True)
        return taken

    def _hear(self, track: Track, samples: np.ndarray) -> None:
        if len(samples):
            self._heard[id(track)].append(samples)

    def _end(self, reader: TrackReader, played_out: bool) -> int:
        reader.finished(self.clock(), played_out)
        self.playing = self._reader = None
        return 0

    # ---- what was played ----

    def heard(self, track: Track) -> np.ndarray:
        parts = self._heard.get(id(track), [])
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)

    def speech(self, label: str, play: int = 0) -> np.ndarray:
        """Samples of the `play`-th played track labelled `label` (an announcement's id)."""
        return self.heard([t for t in self.played if t.label == label][play])

    def order(self) -> list[str]:
        """Labels of the tracks played, `id@n` for the n-th play of `id`."""
        seen: dict[str, int] = {}
        out = []
        for track in self.played:
            out.append(f"{track.label}@{seen.get(track.label, 0)}")
            seen[track.label] = seen.get(track.label, 0) + 1
        return out


@dataclass
class Emitted:
    id: str
    event: str
    reason: str
    warnings: tuple[str, ...]
    cached: bool
    zones: tuple[str, ...] = ()
    """The zones the event names (`zones=`)."""
    zone: str | None = None
    """The one zone whose output failed (`zone=`), for a zone's `error`."""


class Recorder:
    """The announcer's `on_event`: every event in order, with what the announcement said then."""

    def __init__(self) -> None:
        self.emitted: list[Emitted] = []

    def __call__(
        self, ann: Announcement, event: str, reason: str, warnings: tuple[str, ...], play=None, **zones
    ) -> None:
        cached = play is not None and play.from_cache
        self.emitted.append(Emitted(ann.id, event, reason, tuple(warnings), cached,
                                    zones.get("zones", ()), zones.get("zone")))  # fmt: skip


class TurnRig:
    """The real announcer over a fake engine, a fake playback and a fake clock, stepped by the test."""

    def __init__(
        self, tmp_path, *, max_batch: int = 4, engine=None, replay=None, queue: dict | None = None,
        zones: tuple[str, ...] = (DEFAULT_ZONE,), **announcements,
    ):  # fmt: skip
        self.tmp_path = tmp_path
        self.clock = FakeClock()
        self.settings = rig_settings(tmp_path, **announcements)
        self.engine = engine if engine is not None else FakeEngine(max_batch)
        """A `FakeEngine`, or the real `Engine` with its loop not started (the test calls `step()`)."""
        self.queue = AnnouncementQueue(
            self.settings.announcements.spool_dir, max_attempts=self.settings.announcements.max_attempts,
            **(queue or {}),
        )  # fmt: skip
        self.playbacks = {zone: FakePlayback(self.clock, zone=zone) for zone in zones}
        """Each zone's audio thread, played by the test (`run()` plays one block in every zone)."""
        self.playback = self.playbacks[zones[0]]
        self.recorder = Recorder()
        # the languages the text front end speaks, as a daemon's catalog has its bundle's: without them
        # the spool's check would let through a language tag the look-ahead then refuses
        self.catalog = VoiceCatalog(("ryan", "anna"), MODEL_LANGUAGES)
        self.defaults = SpeechDefaults("ryan", "english", None)
        self.lookahead = LookAhead(
            self.engine, self.settings, self.defaults, TextOptions(), self.catalog, replay
        )
        self.lookahead.rtf = FAKE_RTF  # as if measured: pieces synthesised ahead may join the batch (pace.py)
        self.announcer = Announcer(
            self.settings, self.queue, self.lookahead, self.playbacks, self.recorder, clock=self.clock
        )

    # ---- driving ----

    def say(self, ann_id: str, text: str, *, redelivered: bool = False, ack=None, **fields) -> Announcement:
        """Hand an announcement to the announcer's inbox as the intake does (applied on the next turn)."""
        priority = fields.pop("priority", Priority.NORMAL)
        priority = Priority.announcement_level(priority) if isinstance(priority, str) else priority
        fields.setdefault("interrupt", priority > Priority.NORMAL)  # the policy's default
        ann = Announcement(id=ann_id, text=text, priority=priority, t_queued=self.clock(), **fields)
        self.announcer.enqueue(ann, redelivered, ack)
        return ann

    def play(self, ann_id: str) -> Play | None:
        """The play of announcement `ann_id` now: playing, or prepared ahead while it waits."""
        return self.announcer.play_of(ann_id)

    def turn(self, times: int = 1) -> None:
        for _ in range(times):
            self.announcer.turn()

    def run(self, until: Callable[[], bool], *, speak: bool = True, limit: int = 2000) -> int:
        """Turn, let the engine synthesise (unless `speak` is off), play one block; until `until()` holds.

        A `FakeEngine` finishes every live request with its `fake_speech`; the real engine takes one
        step. Returns the turns it took; AssertionError after `limit`.
        """
        for n in range(1, limit + 1):
            self.turn()
            if until():
                return n
            if speak and isinstance(self.engine, FakeEngine):
                self.engine.speak_all()
            elif speak:
                self.engine.step()
            for playback in self.playbacks.values():
                playback.block()
            self.clock.advance(BLOCK / 24000)
        raise AssertionError(f"not reached within {limit} turns; events {self.events()}")

    def run_until_event(self, ann_id: str, event: str, count: int = 1, **kwargs) -> int:
        return self.run(lambda: self.kinds(ann_id).count(event) >= count, **kwargs)

    # ---- reading ----

    def events(self, ann_id: str | None = None) -> list[tuple[str, str]]:
        return [(e.event, e.reason) for e in self.recorder.emitted if ann_id is None or e.id == ann_id]

    def emitted(self, ann_id: str, event: str) -> list[Emitted]:
        return [e for e in self.recorder.emitted if e.id == ann_id and e.event == event]

    def kinds(self, ann_id: str) -> list[str]:
        return [event for event, _ in self.events(ann_id)]

    def spooled(self) -> list[str]:
        """Ids in the spool directory, in spool order."""
        paths = sorted(self.settings.announcements.spool_dir.glob("*.json"))
        return [json.loads(p.read_text())["announcement"]["id"] for p in paths]
