"""Issue 24 item 5: a sentence the frame cap stopped (the model ran away) is said in the `finished`
event's warnings; a play whose requests all ended at end-of-speech has none. Fake engine, playback and
clock (tests/support/announcer_fakes.py), and the real Engine over the fake runner for the counter."""

from __future__ import annotations

from announcer_fakes import TurnRig
from announcer_rig import fake_engine
from engine_fakes import FakeRunner

from qwen3tts.appliance.priority import Priority
from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.servers.metrics import ServerMetrics

TWO = "Mind the gap. Stand clear of the doors."


def _play(tmp_path, run_away: set[int]) -> TurnRig:
    rig = TurnRig(tmp_path)
    rig.played = rig.say("a", TWO)
    rig.turn()
    for index, handle in enumerate(rig.engine.of("a")):
        if index in run_away:
            handle.run_away()
        else:
            handle.speak()
    rig.run_until_event("a", "finished", speak=False)
    return rig


def test_a_sentence_stopped_by_the_frame_cap_is_a_warning_of_the_finished_event(tmp_path):
    rig = _play(tmp_path, run_away={1})
    [finished] = rig.emitted("a", "finished")
    [warning] = finished.warnings
    assert warning.startswith("sentence 2 was stopped at the frame cap (")
    assert "did not end its speech" in warning


def test_a_play_that_ended_at_end_of_speech_has_no_warning(tmp_path):
    rig = _play(tmp_path, run_away=set())
    [finished] = rig.emitted("a", "finished")
    assert finished.warnings == ()


def test_a_new_play_of_the_announcement_starts_without_the_last_play_s_warnings(tmp_path):
    rig = _play(tmp_path, run_away={0, 1})
    [finished] = rig.emitted("a", "finished")
    assert [w.split(" was")[0] for w in finished.warnings] == ["sentence 1", "sentence 2"]
    assert rig.lookahead.prepare(rig.played).runaway == ()  # a repeat is a new play


def _metric(metrics: ServerMetrics, name: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    raise AssertionError(f"{name} not in /metrics")


def _run(engine, request: Request):
    handle = engine.submit(request)
    while not handle.wait(0):
        engine.step()
    return handle


def test_the_engine_counts_a_request_that_ends_at_its_cap_and_not_one_that_ends_at_eos():
    engine = fake_engine(FakeRunner(eos_at=3))  # end-of-speech forced a few frames in
    metrics = ServerMetrics(engine)
    name = "qwen3tts_sentences_frame_capped_total"
    assert _metric(metrics, name) == 0
    normal = _run(engine, Request(id="eos", text="Hello.", language="english", speaker="ryan",
                                  rank=Priority.NORMAL.rank, max_frames=500))  # fmt: skip
    assert normal.status is SequenceStatus.FINISHED_STOPPED
    assert _metric(metrics, name) == 0
    capped = _run(engine, Request(id="cap", text="Hello.", language="english", speaker="ryan",
                                  rank=Priority.NORMAL.rank, max_frames=3))  # fmt: skip
    assert capped.status is SequenceStatus.FINISHED_LENGTH
    assert _metric(metrics, name) == 1
