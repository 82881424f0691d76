"""What the daemon names again and again never reaches CPython's interned-strings table (issue 37).

pathlib interns every part of every path it parses; a name made anew (per request, per poll) then takes
a slot in the table and leaves a dummy behind when it is dropped, and the 3.7 MB table is rebuilt
whenever the slots run out (docs/benchmarks.md). The spool, the phrase cache and the WAV sink name their
per-request files as `str`, the thermal readers their attributes; each test records what is interned
while one request's files come and go, or while the sensors are read.
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest
from fake_sysfs import laptop

from qwen3tts.appliance.announcements.announcement import Announcement
from qwen3tts.appliance.announcements.phrase_cache import PhraseCache
from qwen3tts.appliance.announcements.spool import Spool
from qwen3tts.appliance.audio.sinks import WavSink
from qwen3tts.appliance.thermal.sensors import read_sensors

KEY = "5e" * 32


@pytest.fixture
def interned(monkeypatch) -> list[str]:
    """Every string pathlib (or anyone calling `sys.intern`) interns from now on."""
    seen: list[str] = []
    real = sys.intern

    def recording(name: str) -> str:
        seen.append(name)
        return real(name)

    monkeypatch.setattr(sys, "intern", recording)
    return seen


def per_request(seen: list[str], *fragments: str) -> list[str]:
    return [name for name in seen if any(fragment in name for fragment in fragments)]


def test_the_control_a_path_parsed_by_pathlib_is_interned(tmp_path, interned):
    _ = tmp_path / "000000000042.json"  # what the spool named its files before
    assert per_request(interned, "000000000042") == ["000000000042.json"]


def test_a_spooled_announcement_written_and_removed_interns_nothing_of_its_own(tmp_path, interned):
    spool = Spool(tmp_path / "spool")
    ann = Announcement(id="req-4711", text="Platform two.", seq=4711)
    spool.write(ann)
    assert [a.id for a in spool.load()] == ["req-4711"]
    spool.remove(ann)
    assert spool.load() == [] and not list((tmp_path / "spool").glob("*.json*"))
    assert per_request(interned, "4711") == []


def test_a_phrase_stored_read_and_evicted_interns_nothing_of_its_own(tmp_path, interned):
    cache = PhraseCache(tmp_path / "cache", max_bytes=800)  # one entry of 100 samples takes 453 bytes
    assert cache.put(KEY, np.ones(100, dtype=np.float32))
    assert cache.get(KEY) is not None
    assert cache.put("a1" * 32, np.ones(100, dtype=np.float32))  # evicts the first: no room for two
    assert cache.get(KEY) is None and cache.stats().evictions == 1
    assert per_request(interned, "5e5e", "a1a1") == []


def test_a_wav_file_written_and_one_abandoned_intern_nothing_of_their_own(tmp_path, interned):
    sink = WavSink(tmp_path / "wav")
    sink.begin("req-4711")
    sink.write(np.zeros(240, dtype=np.float32))
    sink.end()
    sink.begin("req-4712")
    sink.end(complete=False)
    assert os.listdir(tmp_path / "wav") == ["000001-req-4711.wav"] and sink.paths[-1].endswith("4711.wav")
    assert per_request(interned, "req-47") == []


def test_reading_the_sensors_interns_none_of_the_attribute_names_it_makes(tmp_path, interned):
    fake = laptop(tmp_path)
    fake.xe(card=2, tile=0, gt=0, throttle={"prochot"})
    fake.set_i915_throttle(1, 0, {"thermal"})
    interned.clear()  # what building the fake tree interned
    first, second = read_sensors(tmp_path), read_sensors(tmp_path)
    assert first == second and second.coretemp and second.zones[1].trips
    assert {"thermal"} < set(second.gpus[0].throttle_reasons) and "prochot" in second.gpus[1].throttle_reasons
    made = re.compile(r"trip_point_\d+_|temp\d+_|(throttle_)?reason_")  # names built at each read
    assert [name for name in interned if made.match(name)] == []
