"""The renderer's outlet over the real announcer (driven by `turn()` with the announcer fakes): media
becomes an announcement of the right kind, the renderer hears the outlet's four events only, a full
queue refuses at once, a renderer that no longer listens never stops the announcer, and Stop and gain
reach the play by id."""

from __future__ import annotations

import numpy as np
import pytest
from announcer_fakes import TurnRig

from qwen3tts.appliance.priority import Priority
from qwen3tts.servers.renderer.outlet import MEDIA_RATE, Media, OutletRefused
from qwen3tts.service.renderer_outlet import QueueOutlet


def media(announce: bool = False, gain: float = 0.5, seconds: float = 1.5) -> Media:
    pcm = np.full(int(seconds * MEDIA_RATE), 0.3, np.float32)
    return Media(pcm=pcm, title="Song", url="http://127.0.0.1/song.wav", announce=announce, gain=gain)


class Heard(list):
    def __call__(self, event: str, reason: str = "") -> None:
        self.append(event)


@pytest.mark.parametrize(("announce", "priority"), [(True, Priority.NORMAL), (False, Priority.BACKGROUND)])
def test_media_plays_as_an_announcement_or_a_stream_and_the_renderer_hears_started_then_finished(
    tmp_path, announce, priority
):
    rig = TurnRig(tmp_path)
    heard = Heard()
    item = media(announce)
    play_id = QueueOutlet(rig.announcer).play(item, heard)
    item.pcm[:] = 0.0  # the renderer's array is its own: what was handed on is a copy
    rig.run_until_event(play_id, "finished", speak=False)
    play = rig.playback.played[0]
    assert play.how.priority is priority and play.how.chime == "none"
    assert play.how.gain == pytest.approx(0.5)
    np.testing.assert_array_equal(
        rig.playback.speech(play_id), np.full(int(1.5 * MEDIA_RATE), 0.3, np.float32)
    )
    assert rig.kinds(play_id) == ["queued", "started", "first_audio", "finished"]
    assert heard == ["started", "finished"]  # queued and first_audio are steps the renderer does not take


def test_a_full_queue_refuses_the_play_at_once(tmp_path):
    rig = TurnRig(tmp_path, queue={"max_queue": 1})
    outlet = QueueOutlet(rig.announcer)
    rig.say("first", "The shop closes in ten minutes.")
    rig.turn()  # it plays
    outlet.play(media(announce=True), Heard())
    rig.turn()  # it waits behind the first one: the queue is full
    with pytest.raises(OutletRefused, match="queue full"):
        outlet.play(media(), Heard())


def test_a_renderer_that_no_longer_listens_does_not_stop_the_announcer(tmp_path):
    rig = TurnRig(tmp_path)

    def closed_loop(event: str, reason: str = "") -> None:
        raise RuntimeError("Event loop is closed")

    play_id = QueueOutlet(rig.announcer).play(media(), closed_loop)
    rig.run_until_event(play_id, "finished", speak=False)
    rig.say("after", "Still here.")
    rig.run_until_event("after", "finished")


def test_stop_and_gain_reach_the_play_by_id(tmp_path):
    rig = TurnRig(tmp_path)
    heard = Heard()
    outlet = QueueOutlet(rig.announcer)
    play_id = outlet.play(media(seconds=5.0), heard)
    rig.run(lambda: rig.play(play_id) is not None and rig.play(play_id).track.taken > 0, speak=False)
    outlet.set_gain(play_id, 0.0)  # muted on the renderer
    rig.turn()
    assert rig.play(play_id).track.how.gain == 0.0
    outlet.stop(play_id)
    rig.run_until_event(play_id, "cancelled", speak=False)
    assert heard == ["started", "cancelled"]
