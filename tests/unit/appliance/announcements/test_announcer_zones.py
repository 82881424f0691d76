"""Zones through `Announcer.turn()`: one play synthesised once and heard in every zone it addresses from
the same PCM; disjoint zones play at once; first come first served per zone; priorities and barge-in per
zone (an emergency on the concourse never cuts platform 3); a zone whose output fails gets its own `error`
while the others play on."""

from __future__ import annotations

import numpy as np
from announcer_fakes import FOUR, TurnRig, expected_pcm, pieces

from qwen3tts.appliance.announcements.announcement import Announcement, Cut

ZONES = ("platform-3", "concourse", "hall")
ALARM = "Fire alarm. Leave the building now."


def rig_with_zones(tmp_path, **kw) -> TurnRig:
    return TurnRig(tmp_path, zones=ZONES, **kw)


def test_an_all_call_is_synthesised_once_and_every_zone_hears_the_same_samples(tmp_path):
    rig = rig_with_zones(tmp_path)
    rig.say("all", FOUR)
    rig.run_until_event("all", "finished")
    assert rig.engine.texts("all") == pieces(FOUR)  # each piece submitted once, for all three zones
    for zone in ZONES:
        np.testing.assert_array_equal(rig.playbacks[zone].speech("all"), expected_pcm(FOUR))
    [started] = rig.emitted("all", "started")
    [finished] = rig.emitted("all", "finished")
    assert started.zones == ZONES and finished.zones == ZONES
    assert rig.announcer.playing == [] and rig.spooled() == []


def test_announcements_for_disjoint_zones_play_at_once_and_each_zone_only_hears_its_own(tmp_path):
    rig = rig_with_zones(tmp_path)
    rig.say("p3", FOUR, zones=("platform-3",))
    rig.say("hall", ALARM, zones=("hall", "concourse"))
    rig.turn()
    assert rig.announcer.playing == [rig.play("p3"), rig.play("hall")]
    assert rig.announcer.zone_states() == {
        "platform-3": {"state": "speaking", "current_id": "p3"},
        "concourse": {"state": "speaking", "current_id": "hall"},
        "hall": {"state": "speaking", "current_id": "hall"},
    }
    rig.run(lambda: rig.kinds("p3").count("finished") and rig.kinds("hall").count("finished"))
    assert rig.playbacks["platform-3"].order() == ["p3@0"]
    assert rig.playbacks["hall"].order() == rig.playbacks["concourse"].order() == ["hall@0"]
    np.testing.assert_array_equal(rig.playbacks["hall"].speech("hall"), expected_pcm(ALARM))
    assert rig.emitted("p3", "finished")[0].zones == ("platform-3",)


def test_a_waiting_announcement_reserves_its_zones_so_a_later_one_of_its_level_cannot_overtake_it(tmp_path):
    rig = rig_with_zones(tmp_path)
    rig.say("first", FOUR, zones=("platform-3",))
    rig.say("both", ALARM, zones=("platform-3", "concourse"))  # waits for platform-3
    rig.say("later", ALARM, zones=("concourse",))  # concourse is free, but "both" came first
    rig.say("elsewhere", ALARM, zones=("hall",))  # nobody waits for the hall: it starts at once
    rig.turn()
    assert [a.id for a in rig.announcer.playing] == ["first", "elsewhere"]
    rig.run_until_event("later", "finished")
    assert rig.playbacks["platform-3"].order() == ["first@0", "both@0"]
    assert rig.playbacks["concourse"].order() == ["both@0", "later@0"]
    starts = [e.id for e in rig.recorder.emitted if e.event == "started"]
    assert starts.index("both") < starts.index("later")


def test_an_emergency_on_the_concourse_does_not_cut_a_normal_announcement_on_platform_3(tmp_path):
    rig = rig_with_zones(tmp_path)
    rig.say("normal", FOUR, zones=("platform-3",))
    rig.turn()
    normal = rig.play("normal")
    rig.say("alarm", ALARM, priority="emergency", zones=("concourse",))
    rig.turn()
    assert normal.cut is None and not normal.track.is_cut
    assert {a.id for a in rig.announcer.playing} == {"normal", "alarm"}
    rig.run(lambda: rig.kinds("normal").count("finished") and rig.kinds("alarm").count("finished"))
    assert "queued" not in rig.kinds("normal")[1:]  # never interrupted
    np.testing.assert_array_equal(rig.playbacks["platform-3"].speech("normal"), expected_pcm(FOUR))


def test_an_emergency_sharing_a_zone_cuts_that_announcement_as_a_whole_and_it_resumes_in_all_its_zones(
    tmp_path,
):
    rig = rig_with_zones(tmp_path)
    rig.say("normal", FOUR, zones=("platform-3", "hall"))
    rig.turn()
    normal = rig.play("normal")
    rig.engine.speak_all()
    rig.turn()
    while normal.track.taken <= 2400:  # inside its second piece in both zones
        for zone in ("platform-3", "hall"):
            rig.playbacks[zone].block()
    rig.say("concourse", FOUR, zones=("concourse",))
    rig.turn()
    untouched = rig.play("concourse")
    rig.say("alarm", ALARM, priority="emergency", zones=("platform-3",))
    rig.turn()
    assert normal.cut is Cut.BARGE_IN and normal.track.is_cut  # the hall is cut too: one play, one cut
    assert untouched in rig.announcer.playing and untouched.cut is None  # lower, but not sharing a zone
    rig.run_until_event("normal", "queued", count=2)
    [again] = rig.emitted("normal", "queued")[1:]
    assert again.reason.endswith("resumes from sentence 2") and again.zones == ("platform-3", "hall")
    rig.run_until_event("normal", "finished")
    for zone in ("platform-3", "hall"):
        assert rig.playbacks[zone].order()[-1] == "normal@1"
        np.testing.assert_array_equal(rig.playbacks[zone].speech("normal", 1), expected_pcm(FOUR, 1))
    assert rig.playbacks["platform-3"].order() == ["normal@0", "alarm@0", "normal@1"]
    assert rig.playbacks["hall"].order() == ["normal@0", "normal@1"]
    assert rig.kinds("concourse") == ["queued", "started", "first_audio", "finished"]


def test_an_emergency_barges_in_on_every_playing_announcement_that_shares_one_of_its_zones(tmp_path):
    rig = rig_with_zones(tmp_path)
    rig.say("p3", FOUR, zones=("platform-3",))
    rig.say("concourse", FOUR, zones=("concourse",))
    rig.say("hall", FOUR, zones=("hall",))
    rig.turn()
    first, second, third = (rig.play(ann_id) for ann_id in ("p3", "concourse", "hall"))
    rig.say("alarm", ALARM, priority="emergency", zones=("platform-3", "concourse"))
    rig.turn()
    assert (first.cut, second.cut, third.cut) == (Cut.BARGE_IN, Cut.BARGE_IN, None)
    rig.run_until_event("alarm", "finished")
    assert rig.emitted("alarm", "finished")[0].zones == ("platform-3", "concourse")


def test_a_zone_whose_output_fails_gets_an_error_while_the_others_play_on_and_it_finishes_there(tmp_path):
    rig = rig_with_zones(tmp_path)
    rig.playbacks["concourse"].fail_next = "AudioError: snapserver went away"
    rig.say("all", FOUR)
    rig.run_until_event("all", "finished")
    [error] = rig.emitted("all", "error")
    assert error.zone == "concourse" and error.reason == "zone concourse: AudioError: snapserver went away"
    [finished] = rig.emitted("all", "finished")
    assert finished.zones == ("platform-3", "hall")
    np.testing.assert_array_equal(rig.playbacks["hall"].speech("all"), expected_pcm(FOUR))
    assert rig.kinds("all") == ["queued", "started", "first_audio", "error", "finished"]


def test_a_play_whose_every_zone_failed_ends_in_one_error(tmp_path):
    rig = TurnRig(tmp_path, zones=("hall", "concourse"))
    for playback in rig.playbacks.values():
        playback.fail_next = "AudioError: lost"
    rig.say("all", FOUR)
    rig.run_until_event("all", "error")
    assert rig.kinds("all") == ["queued", "started", "first_audio", "error"]
    assert rig.play("all") is None and rig.spooled() == []


def test_a_spooled_announcement_for_a_zone_this_box_no_longer_has_fails_naming_its_zones(tmp_path):
    rig = rig_with_zones(tmp_path)
    rig.say("gone", FOUR, zones=("car-park",))
    rig.turn()
    assert rig.events("gone")[-1] == (
        "error",
        "no zone car-park on this box (its zones: platform-3, concourse, hall)",
    )
    assert rig.announcer.playing == [] and rig.spooled() == []


def test_zones_are_spooled_with_the_announcement():
    ann = Announcement(id="a", text="x", zones=("platform-3", "concourse"))
    assert Announcement.from_json(ann.to_json()).zones == ("platform-3", "concourse")
    assert Announcement.from_json({"id": "b", "text": "y"}).zones == ()
