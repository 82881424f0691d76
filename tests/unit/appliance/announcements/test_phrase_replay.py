"""Announcements played again without synthesis, through `Announcer.turn()` and the fake engine.

A phrase cache hit plays the identical samples without an engine request and is all there when the
play starts; `repeat` replays the first rendition (from memory, released after the last play; with
`cache.enabled: false` too, and then nothing is written to disk); `"cache": false` synthesises and
stores nothing; a cut play is never stored; the message's seed reaches the engine request.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from announcer_fakes import TurnRig, expected_pcm

from qwen3tts.appliance.announcements.phrase_cache import PhraseCache
from qwen3tts.appliance.announcements.phrase_replay import PhraseReplay
from qwen3tts.settings import CacheSettings, ModelSettings
from qwen3tts.voices.catalog import VoiceCatalog

TEXT = "Store notice, part one. Store notice, part two."


@pytest.fixture
def make_rig(tmp_path):
    def make(disk: bool = True, **announcements) -> TurnRig:
        cache = PhraseCache(tmp_path / "phrases", 50 * 2**20) if disk else None  # cache.enabled
        replay = PhraseReplay(cache, bundle_hash="rig", sampling={"greedy": True})
        return TurnRig(tmp_path, replay=replay, **announcements)

    return make


def cached(rig: TurnRig, ann_id: str) -> list[tuple[str, bool]]:
    return [(e.event, e.cached) for e in rig.recorder.emitted if e.id == ann_id and e.event != "queued"]


def test_a_cache_hit_plays_the_identical_samples_at_once_without_synthesis(make_rig):
    rig = make_rig()
    rig.say("first", TEXT)
    rig.run_until_event("first", "finished")
    assert len(rig.engine.of("first")) == 2 and rig.lookahead.replay.stats()["entries"] == 1
    assert cached(rig, "first") == [("started", False), ("first_audio", False), ("finished", False)]

    rig.say("again", f"  {TEXT} ")  # the same pieces after the text front end: the same key
    rig.turn()
    again = rig.play("again")
    assert rig.engine.of("again") == [] and again.track.closed  # all of it is there before it plays
    assert again.track.available == len(expected_pcm(TEXT))
    rig.run_until_event("again", "finished")
    np.testing.assert_array_equal(rig.playback.speech("again"), rig.playback.speech("first"))
    assert cached(rig, "again") == [("started", True), ("first_audio", True), ("finished", True)]
    assert rig.lookahead.replay.stats()["hits"] == 1


def test_a_repeat_replays_the_first_rendition_without_a_disk_cache(make_rig):
    rig = make_rig(disk=False)
    rig.say("twice", TEXT, repeat=2)
    rig.run_until_event("twice", "finished")
    assert rig.lookahead.replay.kept_for_repeats("twice")  # kept in memory for the next play
    rig.run_until_event("twice", "finished", count=2)
    assert len(rig.engine.of("twice")) == 2  # the pieces of the first play only
    np.testing.assert_array_equal(rig.playback.speech("twice", 1), rig.playback.speech("twice", 0))
    assert [c for e, c in cached(rig, "twice") if e == "started"] == [False, True]
    assert not rig.lookahead.replay.kept_for_repeats("twice")  # released after its last play


def test_cache_false_synthesises_and_stores_nothing_and_the_seed_reaches_the_engine(make_rig):
    rig = make_rig()
    rig.say("fresh", TEXT, cache=False, seed=42)
    rig.run_until_event("fresh", "finished")
    assert rig.lookahead.replay.stats()["entries"] == 0
    rig.say("cached", TEXT, seed=42)
    rig.run_until_event("cached", "finished")
    rig.say("bypass", TEXT, seed=42, cache=False)
    rig.run_until_event("bypass", "finished")
    assert len(rig.engine.of("bypass")) == 2 and cached(rig, "bypass")[0] == ("started", False)
    assert {h.request.seed for h in rig.engine.handles} == {42}
    rig.say("other-seed", TEXT, seed=43)  # another seed is another rendition
    rig.run_until_event("other-seed", "finished")
    assert len(rig.engine.of("other-seed")) == 2


def test_a_stopped_play_is_not_stored(make_rig):
    rig = make_rig()
    rig.say("cut", TEXT)
    rig.run_until_event("cut", "first_audio")
    rig.announcer.stop("id", "cut", lambda event, **fields: None)
    rig.run_until_event("cut", "cancelled")
    assert rig.lookahead.replay.stats()["entries"] == 0


def test_an_interrupted_play_is_not_stored_and_its_resumed_play_is_synthesised(make_rig):
    rig = make_rig()
    rig.say("normal", TEXT)
    rig.turn()
    rig.engine.speak_all()
    rig.turn()
    rig.playback.block()
    rig.say("alarm", "Fire alarm.", priority="emergency")
    rig.run_until_event("normal", "finished")
    assert rig.lookahead.replay.stats()["entries"] == 2  # alarm, normal's 2nd play
    assert len(rig.engine.of("normal")) == 4


def test_repeats_of_a_cache_false_announcement_are_synthesised_again(make_rig):
    rig = make_rig()
    rig.say("fresh-twice", TEXT, repeat=2, cache=False)
    rig.run_until_event("fresh-twice", "finished", count=2)
    assert len(rig.engine.of("fresh-twice")) == 4
    assert [c for e, c in cached(rig, "fresh-twice") if e == "started"] == [False, False]


def test_cache_disabled_writes_nothing_and_a_repeat_plays_from_memory_until_its_last_play(tmp_path):
    phrases = tmp_path / "phrases"
    rig = TurnRig(tmp_path)
    settings = replace(
        rig.settings,
        cache=CacheSettings(enabled=False, phrase_dir=phrases),
        model=ModelSettings(bundle=tmp_path / "bundle"),  # no manifest: hashed as ""
    )
    replay = PhraseReplay.from_settings(settings, rig.engine, VoiceCatalog(("ryan",)))  # as the daemon
    rig = TurnRig(tmp_path, replay=replay)
    rig.say("thrice", TEXT, repeat=3)
    rig.run_until_event("thrice", "finished", count=3)
    assert len(rig.engine.of("thrice")) == 2  # the pieces of the first play only
    np.testing.assert_array_equal(rig.playback.speech("thrice", 2), rig.playback.speech("thrice", 0))
    assert not replay.kept_for_repeats("thrice") and replay.cache is None and replay.stats() == {}
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "spool" not in p.relative_to(tmp_path).parts]
    assert not phrases.exists() and written == []


def test_a_text_track_other_than_auto_keys_other_phrases_and_auto_keeps_the_old_keys(tmp_path):
    rig = TurnRig(tmp_path)
    base = replace(rig.settings, model=ModelSettings(bundle=tmp_path / "bundle"))

    def key(text_track: str) -> str:
        settings = replace(base, engine=replace(base.engine, text_track=text_track))
        replay = PhraseReplay.from_settings(settings, rig.engine, VoiceCatalog(("ryan",)))
        return replay.key(["Store notice."], "ryan", "english", None, None)

    assert len({key("auto"), key("whole"), key("streamed")}) == 3  # streamed audio is other audio
    unkeyed = PhraseReplay.from_settings(base, rig.engine, VoiceCatalog(("ryan",)))
    assert "text_track" not in unkeyed.sampling  # a phrase cached before the setting still hits
