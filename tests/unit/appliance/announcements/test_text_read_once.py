"""An announcement's text is read once, where it is handed to the announcer (`Announcer.enqueue`, the
spool's replay), never in the announcer's loop: a resume and a repeat play the pieces read then."""

from __future__ import annotations

from announcer_fakes import FOUR, TurnRig, expected_pcm

from qwen3tts.synthesis import TextOptions
from qwen3tts.text import prepare


class CountingFrontEnd:
    """The text front end, recording each text it reads."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text, *args, **kwargs):
        self.texts.append(text)
        return prepare(text, *args, **kwargs)


def counting_rig(tmp_path, **announcements) -> tuple[TurnRig, CountingFrontEnd]:
    rig = TurnRig(tmp_path, **announcements)
    front_end = CountingFrontEnd()
    rig.lookahead.text = TextOptions(front_end=front_end)
    return rig, front_end


def test_the_text_is_read_when_handed_over_and_not_again_for_a_resume_or_a_repeat(tmp_path):
    rig, front_end = counting_rig(tmp_path)
    rig.say("normal", FOUR, repeat=2)
    assert front_end.texts == [FOUR]  # read on the thread that handed it over, before any turn
    rig.turn()
    rig.engine.speak_all()
    rig.turn()
    while rig.play("normal").track.taken <= 2400:
        rig.playback.block()
    rig.say("alarm", "Fire alarm.", priority="emergency")
    rig.run_until_event("normal", "finished", count=2)
    assert rig.kinds("normal").count("queued") == 2  # barged in, resumed, then played again
    assert front_end.texts == [FOUR, "Fire alarm."]  # neither the resume nor the repeat read it again
    assert rig.playback.speech("normal", 2).size == expected_pcm(FOUR).size


def test_a_text_that_cannot_be_read_is_queued_and_fails_when_it_would_play_with_the_reason(tmp_path):
    rig, front_end = counting_rig(tmp_path)
    rig.say("klingon", "nuqneH", lang="klingon")
    rig.turn()
    [(event, reason)] = rig.events("klingon")[1:]
    assert event == "error" and reason.startswith("unknown language 'klingon'")
    assert front_end.texts == ["nuqneH"] and rig.spooled() == []


def test_the_spool_s_replay_reads_each_text_once_before_the_loop_runs(tmp_path):
    rig, _ = counting_rig(tmp_path)
    rig.say("waiting", FOUR)
    rig.turn()
    after, front_end = counting_rig(tmp_path)  # the next process, over the same spool
    after.announcer.replay()
    [replayed] = after.queue.waiting()
    assert front_end.texts == [FOUR] and len(replayed.pieces) == 4
    after.announcer.replay()  # once: the loop's own call finds it done
    assert front_end.texts == [FOUR]
    after.run_until_event("waiting", "finished")
    assert front_end.texts == [FOUR]
