"""Pre-rendered media as an announcement, through `Announcement.turn()` with the announcer fakes: played
from its samples (no synthesis, never spooled), a stream at BACKGROUND that every announcement interrupts
and that resumes from the segment it was in, its own gain while it plays, stop by id, the events its
listener hears, and a shutdown that ends it with an event (nothing keeps it)."""

from __future__ import annotations

import numpy as np
import pytest
from announcer_fakes import TurnRig

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.media import AHEAD_S, NOT_KEPT
from qwen3tts.appliance.announcements.media_audio import SEGMENT, MediaAudio, media_pcm
from qwen3tts.appliance.audio.sinks import MODEL_RATE
from qwen3tts.appliance.priority import Priority

ALARM = "Fire alarm. Leave the building now."
BARGED_IN = "an emergency announcement barged in"


def song(seconds: float = 3.5) -> np.ndarray:
    """Samples that say where they are: sample i is never 0 and differs from every other."""
    n = int(seconds * MODEL_RATE)
    return (0.05 + 0.9 * np.arange(n) / n).astype(np.float32)


class Heard(list):
    """A media announcement's listener: (event, reason) as it was told."""

    def __call__(self, event: str, reason: str) -> None:
        self.append((event, reason))


def queue_media(rig: TurnRig, ann_id: str = "song", pcm=None, priority=Priority.BACKGROUND, volume=None):
    heard = Heard()
    pcm = song() if pcm is None else pcm
    ann = Announcement(
        id=ann_id, text="A song", priority=priority, chime="none", volume=volume, t_queued=rig.clock(),
        media=MediaAudio(media_pcm(pcm), heard),
    )  # fmt: skip
    rig.announcer.enqueue(ann)
    return pcm, heard


def play_into(rig: TurnRig, ann_id: str, sample: int):
    """Turn and play blocks until the audio thread is past `sample` of the play of `ann_id`."""
    rig.run(lambda: rig.play(ann_id) is not None and rig.play(ann_id).track.taken > sample, speak=False)
    return rig.play(ann_id)


def test_media_plays_its_own_samples_without_synthesis_or_spool_and_its_listener_hears_each_step(tmp_path):
    rig = TurnRig(tmp_path)
    pcm, heard = queue_media(rig)
    rig.turn()
    assert rig.spooled() == []  # queued, and not spooled: lost with the process
    playing = play_into(rig, "song", 0)
    assert playing.track.received <= playing.track.taken + AHEAD_S * MODEL_RATE + SEGMENT  # filled ahead only
    rig.run_until_event("song", "finished", speak=False)
    np.testing.assert_array_equal(rig.playback.speech("song"), pcm)
    assert rig.engine.handles == []  # nothing of it went to the engine
    assert rig.kinds("song") == ["queued", "started", "first_audio", "finished"]
    assert heard == [(event, "") for event in ("queued", "started", "first_audio", "finished")]
    assert rig.spooled() == []


@pytest.mark.parametrize("k", [0, 2])
def test_an_emergency_barges_in_on_a_stream_which_resumes_from_the_segment_it_was_in(tmp_path, k):
    rig = TurnRig(tmp_path)
    pcm, heard = queue_media(rig)
    stream = play_into(rig, "song", k * SEGMENT + SEGMENT // 2)
    rig.say("alarm", ALARM, priority="emergency")
    rig.turn()
    assert stream.track.is_cut
    rig.run_until_event("song", "finished")
    assert rig.playback.order() == ["song@0", "alarm@0", "song@1"]
    assert rig.events("song")[3] == ("queued", f"{BARGED_IN}; resumes at {k} s")
    np.testing.assert_array_equal(rig.playback.speech("song", 1), pcm[k * SEGMENT :])  # from its segment
    assert [event for event, _ in heard] == ["queued", "started", "first_audio", "queued", "started",
                                             "first_audio", "finished"]  # fmt: skip


def test_a_normal_announcement_that_may_not_interrupt_still_takes_over_a_stream_at_a_segment_boundary(
    tmp_path,
):
    rig = TurnRig(tmp_path)
    pcm, _ = queue_media(rig)
    stream = play_into(rig, "song", SEGMENT // 2)
    rig.say("notice", "The shop closes in ten minutes.")  # normal: interrupt is False
    rig.run_until_event("song", "finished")
    assert stream.cut_at == 1 and rig.playback.order() == ["song@0", "notice@0", "song@1"]
    assert rig.events("song")[3] == ("queued", "an announcement took over; resumes at 1 s")
    first, resumed = rig.playback.speech("song", 0), rig.playback.speech("song", 1)
    np.testing.assert_array_equal(first, pcm[:SEGMENT])  # ended at the boundary ...
    np.testing.assert_array_equal(
        resumed, pcm[SEGMENT:]
    )  # ... and resumed there: nothing lost, nothing twice


def test_media_from_an_announce_source_waits_behind_a_normal_announcement_like_one(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("notice", "The shop closes in ten minutes.")
    rig.turn()
    queue_media(rig, "doorbell", pcm=song(1.2), priority=Priority.NORMAL)
    rig.run_until_event("doorbell", "finished")
    assert rig.playback.order() == ["notice@0", "doorbell@0"]  # it waited: a normal one is no stream


def test_a_gain_change_reaches_the_playing_track_and_a_resume_and_leaves_the_master_volume(tmp_path):
    rig = TurnRig(tmp_path)
    queue_media(rig, volume=0.25)
    stream = play_into(rig, "song", 0)
    assert stream.track.how.gain == pytest.approx(0.25)
    rig.announcer.set_gain("song", 0.64)
    rig.turn()
    assert stream.track.how.gain == pytest.approx(0.64)
    assert rig.announcer.volume == pytest.approx(1.0)  # the master volume is not the renderer's
    rig.say("alarm", ALARM, priority="emergency")
    rig.run_until_event("song", "started", count=2)
    assert rig.play("song").track.how.gain == pytest.approx(0.64)  # the resumed play keeps it


def test_a_gain_change_while_it_waits_is_the_gain_it_starts_with(tmp_path):
    rig = TurnRig(tmp_path)
    rig.say("notice", "The shop closes in ten minutes.")
    rig.turn()
    queue_media(rig, volume=0.5, priority=Priority.NORMAL)
    rig.announcer.set_gain("song", 0.1)
    rig.run_until_event("song", "started")
    assert rig.play("song").track.how.gain == pytest.approx(0.1)


@pytest.mark.parametrize("where", ["waiting", "playing"])
def test_stop_by_id_cancels_it_and_its_listener_hears_cancelled(tmp_path, where):
    rig = TurnRig(tmp_path)
    if where == "waiting":
        rig.say("notice", "The shop closes in ten minutes.")
        rig.turn()
    _, heard = queue_media(rig, priority=Priority.NORMAL)
    if where == "playing":
        play_into(rig, "song", 0)
    else:
        rig.turn()
    answers = []
    rig.announcer.stop("id", "song", lambda event, **fields: answers.append(event))
    rig.run(lambda: rig.kinds("song")[-1] == "cancelled", speak=False)
    assert answers == ["stopped"] and heard[-1][0] == "cancelled"


def test_a_shutdown_ends_playing_and_waiting_media_with_an_event_as_nothing_keeps_it(tmp_path):
    rig = TurnRig(tmp_path)
    _, heard = queue_media(rig)
    play_into(rig, "song", 0)
    queue_media(rig, "next", priority=Priority.BACKGROUND)
    rig.turn()
    rig.announcer.drain(finish=False, timeout=0)
    rig.run(lambda: rig.kinds("song")[-1] == "cancelled" and not rig.announcer.playing, speak=False)
    assert rig.events("song")[-1] == ("cancelled", NOT_KEPT) == heard[-1]
    assert rig.events("next")[-1] == ("cancelled", NOT_KEPT)
    assert rig.spooled() == []
