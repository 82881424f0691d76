"""Each zone's output state as the service reports it (service/outputs.py): which zones are not ok,
the status' `audio` summary, the log line per change, and the audio threads' worker names. Opening the
sinks themselves is the zones' own tests."""

import logging
from types import SimpleNamespace

from qwen3tts.service.outputs import OutputStates, audio_worker


def states():
    changes = []
    return OutputStates(on_change=lambda: changes.append(1)), changes


def test_a_lost_zone_is_the_first_problem_until_it_is_ok_again(caplog):
    outputs, changes = states()
    assert outputs.first_problem() == "ok"
    with caplog.at_level(logging.INFO, logger="qwen3tts.service.outputs"):
        outputs.changed("hall", "lost", "device unplugged")
        assert outputs.first_problem() == "lost"
        outputs.changed("hall", "ok", "reopened")
    assert outputs.first_problem() == "ok" and outputs.states == {}
    assert len(changes) == 2  # the service republishes its status on each change
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "zone hall output lost: device unplugged"),
        ("INFO", "zone hall output ok: reopened"),
    ]


def test_the_first_zone_that_failed_is_the_one_reported():
    outputs, _ = states()
    outputs.changed("hall", "lost", "gone")
    outputs.changed("gate", "stalled", "no samples taken")
    assert outputs.first_problem() == "lost"
    outputs.changed("hall", "ok", "back")
    assert outputs.first_problem() == "stalled"


def test_one_default_zone_is_summarised_as_its_sink_and_state():
    outputs, _ = states()
    outputs.changed("default", "lost", "gone")
    assert outputs.summary({"default": SimpleNamespace(name="alsa")}) == "alsa:lost"


def test_several_zones_are_summarised_each_with_its_sink_and_state():
    outputs, _ = states()
    outputs.changed("gate", "lost", "snapserver down")
    sinks = {"hall": SimpleNamespace(name="alsa"), "gate": SimpleNamespace(name="snapcast")}
    assert outputs.summary(sinks) == "hall=alsa:ok, gate=snapcast:lost"


def test_the_default_zones_audio_thread_is_audio_and_others_carry_their_zone():
    assert audio_worker("default") == "audio"
    assert audio_worker("gate") == "audio:gate"
