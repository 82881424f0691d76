"""Announcer benchmark: the speech half of the daemon in one process, against a real-time null sink.

Measures what a listener notices (docs/announcer.md, "Measuring"):
  1. one 4-sentence announcement of about 15 s: queued -> first_audio, underflows, queued -> finished;
  2. N announcements queued at once: the gap between one `finished` and the next `first_audio`
     (target: lead-in + chime + <= 100 ms), plus the engine's mean batch.
The sink consumes audio at 24 kHz in real time like a sound card with a 100 ms buffer and counts the
times it ran dry, so the timeline is the one a loudspeaker would give (a WAV sink is not paced).

    PYTHONPATH=daemon .venv/bin/python scripts/bench_announcer.py --bundle var/bench/bundle-0.6b-int8
    (--set KEY=VALUE overrides a setting, e.g. --set engine.max_frames=8 for a quick look on a tiny bundle)
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory

from qwen3tts.appliance.announcements.announcer import Announcer
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.audio.chimes import ChimeSet
from qwen3tts.appliance.audio.playback import Playback
from qwen3tts.appliance.mqtt.answers import announcement_events
from qwen3tts.appliance.mqtt.events import Event
from qwen3tts.appliance.mqtt.policy import AnnouncementPolicy
from qwen3tts.appliance.mqtt.say_reader import admit
from qwen3tts.appliance.priority import Priority
from qwen3tts.appliance.systemd.supervisor import Supervisor
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings
from qwen3tts.synthesis import SpeechDefaults, TextOptions
from qwen3tts.voices.catalog import VoiceCatalog

RATE = 24000
DEVICE_BUFFER_S = 0.1
SENTENCES = [
    "Good afternoon, this is an announcement for all customers in the store.",
    "The checkout on the ground floor will close in fifteen minutes from now.",
    "Please bring your purchases to the main registers near the entrance doors.",
    "Thank you for shopping with us, and we wish you a very pleasant evening.",
]


class RealTimeSink:
    """Consumes samples at 24 kHz in real time with a 100 ms device buffer; counts times it ran dry."""

    paced = True
    state = "ok"
    name = "realtime-null"

    def __init__(self) -> None:
        self.dry = 0
        self._until: float | None = None  # monotonic time the queued audio runs out

    def begin(self, item_id: str) -> None:
        self._until = None

    def write(self, block) -> bool:
        now = time.monotonic()
        ran_dry = self._until is not None and now > self._until
        self.dry += ran_dry
        self._until = max(now, self._until or now) + len(block) / RATE
        wait = self._until - time.monotonic() - DEVICE_BUFFER_S
        if wait > 0:
            time.sleep(wait)
        return ran_dry

    def latency(self) -> float:
        return max(0.0, (self._until or 0.0) - time.monotonic())

    def end(self, complete: bool = True) -> None:
        self._until = None

    def recover(self) -> bool:
        return True

    def close(self) -> None:
        pass


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config, args.set)
    with TemporaryDirectory() as spool:
        settings = replace(
            settings,
            announcements=replace(settings.announcements, spool_dir=Path(spool), lookahead_s=args.lookahead),
        )
        runtime = load_runtime(args.bundle, settings)
        events: list[Event] = []
        sink = RealTimeSink()
        queue = AnnouncementQueue(Path(spool))
        playback = Playback(sink, settings.audio, ChimeSet.from_settings(settings.audio),
                            on_end=lambda: announcer.wake())  # fmt: skip
        spec = runtime.spec
        defaults = SpeechDefaults.from_settings(settings.voice, spec.speakers)
        catalog = VoiceCatalog(spec.speakers, spec.languages)
        lookahead = LookAhead(runtime.engine, settings, defaults, TextOptions(), catalog)

        def record(ann, event, reason, warnings, **zones) -> None:  # the announcer's OnEvent, as in service/
            messages = announcement_events(ann, event, reason, time.time(), warnings, **zones)
            events.extend(m for m in messages if isinstance(m, Event))

        announcer = Announcer(settings, queue, lookahead, playback, record)
        supervisor = Supervisor(on_fatal=lambda name: sys.exit(f"worker {name} kept failing"))
        runtime.engine.start()
        supervisor.start("audio", playback.run)
        supervisor.start("announcer", announcer.run)
        try:
            lead = settings.audio.lead_in_ms / 1000
            chime = ChimeSet.from_settings(settings.audio).for_announcement(Priority.NORMAL, None)
            lead += 0 if chime is None else len(chime) / RATE
            print(
                f"bundle {args.bundle}, look-ahead {args.lookahead:g} s, lead-in + chime {lead * 1000:.0f} ms"
            )
            single(announcer, events, sink, playback)
            burst(announcer, events, sink, args.count, lead)
            stats = runtime.engine.stats()
            print(f"engine: mean_batch {stats.mean_batch:.2f}, frames/s {stats.frames_per_second:.1f}")
        finally:
            announcer.drain(finish=False, timeout=10)
            supervisor.stop()
            runtime.engine.stop()
    return 0


def say(announcer: Announcer, ann_id: str, text: str) -> None:
    announcer.enqueue(admit(AnnouncementPolicy(max_text_chars=10_000), time.time(), text=text, id=ann_id))


def wait_finished(events: list[Event], ids: list[str], timeout: float = 1800) -> dict[str, Event]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = {e.id: e for e in list(events) if e.event in ("finished", "error", "cancelled")}
        if all(i in done for i in ids):
            return done
        time.sleep(0.05)
    raise TimeoutError(f"not finished within {timeout} s: {ids}")


def single(announcer, events, sink, playback) -> None:
    before = (sink.dry, playback.underflows)
    say(announcer, "single", " ".join(SENTENCES))
    end = wait_finished(events, ["single"])["single"]
    print(f"4 sentences: queued->first_audio {end.t_first_audio - end.t_queued:.2f} s, "
          f"queued->finished {end.t_finished - end.t_queued:.2f} s, "
          f"underflows {playback.underflows - before[1]} (sink ran dry {sink.dry - before[0]})")  # fmt: skip


def burst(announcer, events, sink, count: int, lead: float) -> None:
    ids = [f"burst-{n}" for n in range(count)]
    before = sink.dry
    for n, ann_id in enumerate(ids):
        say(announcer, ann_id, f"{SENTENCES[n % 4]} {SENTENCES[(n + 1) % 4]}")
    done = wait_finished(events, ids)
    gaps = [done[b].t_first_audio - done[a].t_finished for a, b in itertools.pairwise(ids)]
    print(f"{count} queued: finished->next first_audio median {statistics.median(gaps) * 1000:.0f} ms, "
          f"max {max(gaps) * 1000:.0f} ms (lead-in + chime {lead * 1000:.0f} ms); "
          f"first queued->first_audio {done[ids[0]].t_first_audio - done[ids[0]].t_queued:.2f} s; "
          f"device ran dry {sink.dry - before}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--config", type=Path, help="settings file (audio lead-in, chimes, voice, engine)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="settings override")
    parser.add_argument("--count", type=int, default=10, help="announcements in the burst (default 10)")
    parser.add_argument(
        "--lookahead", type=float, default=20.0, help="announcements.lookahead_s (default 20)"
    )
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
