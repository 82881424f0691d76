"""The announcer's collaborators, each alone: `Choosing`, `Endings` and `Commands` built from their declared
inputs over the fake engine, playbacks and clock (no announcer, no loop), each step called by the test."""

from __future__ import annotations

import numpy as np
from announcer_fakes import FAKE_RTF, FOUR, FakeEngine, FakePlayback, Recorder, expected_pcm
from announcer_rig import rig_settings
from audio_fakes import FakeClock

from qwen3tts.appliance.announcements.announcement import Announcement, Cut
from qwen3tts.appliance.announcements.choosing import Choosing
from qwen3tts.appliance.announcements.commands import Commands
from qwen3tts.appliance.announcements.endings import Endings
from qwen3tts.appliance.announcements.lookahead import LookAhead
from qwen3tts.appliance.announcements.play import Play, Plays
from qwen3tts.appliance.announcements.queue import AnnouncementQueue
from qwen3tts.appliance.announcements.reporter import Reporter
from qwen3tts.appliance.priority import Priority
from qwen3tts.synthesis import SpeechDefaults, TextOptions
from qwen3tts.voices.catalog import VoiceCatalog


class Parts:
    """The inputs the announcer gives its collaborators, made by hand."""

    def __init__(self, tmp_path, zones: tuple[str, ...] = ("default",), **announcements) -> None:
        self.clock = FakeClock()
        settings = rig_settings(tmp_path, **announcements)
        self.engine = FakeEngine()
        self.queue = AnnouncementQueue(settings.announcements.spool_dir)
        self.plays = Plays()
        self.recorder = Recorder()
        self.reporter = Reporter(self.recorder, zone_count=len(zones))
        self.defaults = SpeechDefaults("ryan", "english", None)
        self.lookahead = LookAhead(
            self.engine, settings, self.defaults, TextOptions(), VoiceCatalog(("ryan",))
        )
        self.lookahead.rtf = FAKE_RTF
        self.playbacks = {zone: FakePlayback(self.clock, zone=zone) for zone in zones}
        self.endings = Endings(self.queue, self.plays, self.lookahead, self.reporter, clock=self.clock)
        self.choosing = Choosing(self.queue, self.plays, self.lookahead, self.playbacks, self.endings,
                                 self.reporter)  # fmt: skip

    def put(self, ann_id: str, text: str = FOUR, **fields) -> Announcement:
        fields.setdefault("interrupt", fields.get("priority", Priority.NORMAL) > Priority.NORMAL)
        self.queue.put(Announcement(id=ann_id, text=text, **fields))
        return self.queue.find(ann_id)

    def events(self, ann_id: str) -> list[tuple[str, str]]:
        return [(e.event, e.reason) for e in self.recorder.emitted if e.id == ann_id]


def test_choosing_starts_disjoint_zones_at_once_and_an_emergency_cuts_only_what_shares_its_zone(tmp_path):
    parts = Parts(tmp_path, zones=("hall", "platform"))
    parts.put("hall", zones=("hall",))
    parts.put("platform", zones=("platform",))
    parts.put("both")  # an all-call waits for both zones
    parts.choosing.choose(parts.clock())
    assert [play.id for play in parts.plays.playing] == ["hall", "platform"]
    assert [t.label for t in parts.playbacks["hall"].handed] == ["hall"]
    assert parts.queue.ids() == ["both"] and parts.queue.spool.load()[0].attempts == 1  # the pop is spooled

    parts.put("alarm", priority=Priority.EMERGENCY, zones=("platform",))
    parts.choosing.choose(parts.clock())
    hall, platform = parts.plays.playing
    assert platform.cut is Cut.BARGE_IN and platform.track.is_cut
    assert hall.cut is None and not hall.track.is_cut  # not in the emergency's zone


def test_choosing_puts_the_master_volume_and_mute_on_the_track_it_starts_but_not_on_an_emergency(tmp_path):
    parts = Parts(tmp_path)
    parts.choosing.volume = 0.5
    parts.put("quiet")
    parts.choosing.choose(parts.clock())
    assert parts.plays.current.track.how.gain == 0.5
    parts.choosing.muted = True
    assert parts.choosing.gain(Announcement(id="n", text="x")) == 0.0
    assert parts.choosing.gain(Announcement(id="e", text="x", priority=Priority.EMERGENCY, volume=0.8)) == 0.8


def started(parts: Parts, ann_id: str) -> Play:
    """`ann_id`, queued, starts in the one zone and all its pieces are synthesised."""
    parts.choosing.choose(parts.clock())
    play = parts.plays.playing_one(ann_id)
    parts.lookahead.submit_due([play])
    parts.engine.speak_all()
    parts.lookahead.move_pcm(play)
    return play


def test_endings_follows_a_play_to_its_end_and_the_spool_forgets_it(tmp_path):
    parts = Parts(tmp_path)
    parts.put("a")
    play = started(parts, "a")
    playback = parts.playbacks["default"]
    while play in parts.plays.playing:
        playback.block()
        parts.clock.advance(0.04)
        parts.endings.follow(play)
    assert parts.events("a") == [("started", ""), ("first_audio", ""), ("finished", "")]
    assert play.t_started == 1000.0 and play.t_finished is not None
    np.testing.assert_array_equal(playback.speech("a"), expected_pcm(FOUR))
    assert parts.queue.spool.load() == [] and play.track.closed


def test_endings_resumes_a_barged_in_play_from_its_piece_with_a_new_play(tmp_path):
    parts = Parts(tmp_path)
    parts.put("a")
    play = started(parts, "a")
    playback = parts.playbacks["default"]
    while play.track.taken <= 2400:  # inside its second piece
        playback.block()
    parts.endings.cut(play, Cut.BARGE_IN)
    playback.block()  # the audio thread ends the cut track
    parts.endings.follow(play)
    assert parts.events("a")[-1] == ("queued", "an emergency announcement barged in; resumes from sentence 2")
    assert parts.plays.playing == [] and parts.queue.find("a").cursor == 1
    resumed = parts.lookahead.prepare(parts.queue.find("a"))
    assert resumed is not play and resumed.first == 1 and len(resumed.pieces) == 3


def test_endings_cancels_with_interrupted_cancel_and_a_weaker_cut_never_replaces_a_stronger_one(tmp_path):
    parts = Parts(tmp_path)
    parts.endings.resume = False
    parts.put("a")
    play = started(parts, "a")
    parts.endings.cut(play, Cut.STOP)
    parts.endings.cut(play, Cut.BARGE_IN)
    assert play.cut is Cut.STOP
    parts.playbacks["default"].block()
    parts.endings.follow(play)
    assert parts.events("a")[-1] == ("cancelled", "stopped") and parts.queue.spool.load() == []


def test_commands_stop_one_waiting_cancel_its_synthesis_and_answer(tmp_path):
    parts = Parts(tmp_path)
    commands = Commands(parts.queue, parts.plays, parts.choosing, parts.endings, parts.reporter,
                        parts.defaults, clock=parts.clock)  # fmt: skip
    waiting = parts.put("w")
    ahead = parts.plays.ahead["w"] = parts.lookahead.prepare(waiting)
    parts.lookahead.submit_due([ahead])
    answers = []
    commands.stop("id", "w", lambda event, **fields: answers.append((event, fields)))
    assert answers == [("stopped", {"id": "w", "scope": "id", "cancelled": ("w",)})]
    assert parts.events("w") == [("cancelled", "stop")] and "w" not in parts.plays.ahead
    assert all(h.cancelled for h in parts.engine.of("w")) and parts.queue.spool.load() == []
    commands.stop("id", "w", lambda event, **fields: answers.append((event, fields)))
    assert answers[-1][0] == "not_found"


def test_commands_shut_down_cuts_what_plays_and_leaves_later_messages_unacknowledged(tmp_path):
    parts = Parts(tmp_path)
    commands = Commands(parts.queue, parts.plays, parts.choosing, parts.endings, parts.reporter,
                        parts.defaults, clock=parts.clock)  # fmt: skip
    acks = []
    commands.enqueue(Announcement(id="a", text=FOUR), False, lambda: acks.append("a"))
    play = started(parts, "a")
    commands.shut_down(finish=False)
    assert play.cut is Cut.SHUTDOWN and not commands.accepting
    commands.enqueue(Announcement(id="late", text="Too late."), False, lambda: acks.append("late"))
    assert acks == ["a"] and parts.events("late") == []  # the broker delivers it again after the restart
    commands.set_volume(0.25, None)
    commands.set_defaults({"voice": "anna"}, None)
    assert parts.choosing.volume == 0.25 and parts.defaults.voice == "anna"
