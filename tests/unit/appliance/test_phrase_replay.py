"""The phrase cache in the announcer: the real Engine over the fake runner, the real audio thread.

A hit plays the identical samples without an engine request and starts at once; `repeat` replays the
first rendition (from memory, released after the last play; with `cache.enabled: false` too, and then
nothing is written to disk); `"cache": false` synthesises and stores nothing; a cut play is never
stored; the message's seed reaches the engine request.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from announcer_rig import Rig, fake_engine, rig_settings, slow_sink
from qwen3tts.voices.registered import RegisteredVoices

from qwen3tts.appliance.announcements.phrase_cache import PhraseCache
from qwen3tts.appliance.announcements.phrase_replay import PhraseReplay
from qwen3tts.appliance.mqtt.messages import Stop
from qwen3tts.settings import CacheSettings

TEXT = "Store notice, part one. Store notice, part two."


@pytest.fixture
def make_rig(tmp_path):
    made: list[Rig] = []

    def make(sink=None, disk=True) -> Rig:
        cache = PhraseCache(tmp_path / "phrases", 50 * 2**20) if disk else None  # cache.enabled
        replay = PhraseReplay(cache, bundle_hash="rig", sampling={"greedy": True})
        rig = Rig(tmp_path, rig_settings(tmp_path), fake_engine(), replay=replay)
        if sink is not None:
            rig.sink = rig.playback.sink = sink
        rig.requests = []
        submit = rig.engine.submit
        rig.engine.submit = lambda request: rig.requests.append(request) or submit(request)
        made.append(rig.start())
        return rig

    yield make
    for rig in made:
        rig.close()


def event(rig, ann_id, kind, n=0):
    return [m for m in rig.published if getattr(m, "id", None) == ann_id and m.event == kind][n]


def submitted(rig, ann_id) -> int:
    return sum(1 for r in rig.requests if r.id.startswith(f"{ann_id}#"))


def test_a_cache_hit_plays_the_identical_samples_at_once_without_synthesis(make_rig):
    rig = make_rig()
    rig.say("first", TEXT)
    rig.wait_for("first", "finished")
    assert submitted(rig, "first") == 2 and event(rig, "first", "finished").cached is None
    assert rig.announcer.synthesis.replay.cache.stats().entries == 1

    rig.say("again", f"  {TEXT} ")  # the same text after normalisation: the same key
    rig.wait_for("again", "finished")
    assert submitted(rig, "again") == 0
    np.testing.assert_array_equal(rig.sink.speech("again"), rig.sink.speech("first"))
    started, first_audio = event(rig, "again", "started"), event(rig, "again", "first_audio")
    assert started.cached and first_audio.cached and event(rig, "again", "finished").cached
    assert first_audio.t_first_audio - started.t_started <= 0.05


def test_a_repeat_replays_the_first_rendition(make_rig):
    rig = make_rig(disk=False)  # cache.enabled off: no disk cache, the repeat still replays
    rig.say("twice", TEXT, repeat=2)
    rig.wait_for("twice", "finished", count=2)
    assert submitted(rig, "twice") == 2  # the sentences of the first play only
    np.testing.assert_array_equal(rig.sink.speech("twice", 1), rig.sink.speech("twice", 0))
    assert event(rig, "twice", "started", 0).cached is None and event(rig, "twice", "started", 1).cached


def test_cache_false_synthesises_and_stores_nothing_and_the_seed_reaches_the_engine(make_rig):
    rig = make_rig()
    rig.say("fresh", TEXT, cache=False, seed=42)
    rig.wait_for("fresh", "finished")
    assert rig.announcer.synthesis.replay.cache.stats().entries == 0
    rig.say("cached", TEXT, seed=42)
    rig.wait_for("cached", "finished")
    rig.say("bypass", TEXT, seed=42, cache=False)
    rig.wait_for("bypass", "finished")
    assert submitted(rig, "bypass") == 2 and event(rig, "bypass", "started").cached is None
    assert {r.seed for r in rig.requests} == {42}
    rig.say("other-seed", TEXT, seed=43)  # another seed is another rendition
    rig.wait_for("other-seed", "finished")
    assert submitted(rig, "other-seed") == 2


def test_a_stopped_play_is_not_stored(make_rig):
    rig = make_rig(sink=slow_sink())
    rig.say("cut", TEXT + " " + TEXT)
    rig.wait_for("cut", "first_audio")
    rig.announcer.command(Stop(scope="id", id="cut"))
    rig.wait_for("cut", "cancelled")
    assert rig.announcer.synthesis.replay.cache.stats().entries == 0


def test_repeats_of_a_cache_false_announcement_are_synthesised_again(make_rig):
    rig = make_rig()
    rig.say("fresh-twice", TEXT, repeat=2, cache=False)
    rig.wait_for("fresh-twice", "finished", count=2)
    assert submitted(rig, "fresh-twice") == 4
    assert event(rig, "fresh-twice", "started", 1).cached is None


def test_cache_disabled_writes_nothing_to_disk_and_a_repeat_plays_from_memory_until_its_last_play(tmp_path):
    phrases = tmp_path / "phrases"
    settings = rig_settings(tmp_path)
    settings = replace(settings, cache=CacheSettings(enabled=False, phrase_dir=phrases))
    engine = fake_engine()
    replay = PhraseReplay.from_settings(settings, engine, RegisteredVoices())  # as the daemon builds it
    rig = Rig(tmp_path, settings, engine, replay=replay)
    rig.requests = []
    submit = engine.submit
    engine.submit = lambda request: rig.requests.append(request) or submit(request)
    rig.start()
    try:
        ann = rig.say("thrice", TEXT, repeat=3)
        rig.wait_for("thrice", "finished", count=3)
    finally:
        rig.close()
    assert submitted(rig, "thrice") == 2  # the sentences of the first play only
    np.testing.assert_array_equal(rig.sink.speech("thrice", 2), rig.sink.speech("thrice", 0))
    assert ann.replay is None  # released after the last play
    assert replay.cache is None and replay.stats() == {}
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "spool" not in p.relative_to(tmp_path).parts]
    assert not phrases.exists() and written == []
