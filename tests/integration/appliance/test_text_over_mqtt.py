"""The text front end through the whole daemon: MQTT say -> lexicon -> normalisation -> engine request.

The Service runs in process with a real mosquitto and the fake runner; a spy on `Engine.submit` shows
the text each engine request got, which is what the model would have been asked to say.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from announcer_rig import RigSink, fake_engine, start_subscribed

from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "text"
TEXT = "Qwen3 leaves platform 4 at 14:05."


def wait_event(recorder, ann_id: str, kind: str, timeout: float = 20.0) -> dict:
    """The first `kind` event of `ann_id`; fails the test at once when it ends another way."""

    def mine(msgs) -> list[dict]:
        found = [json.loads(m.payload) for m in msgs if m.topic == f"qwen3tts/{SITE}/event"]
        return [e for e in found if e.get("id") == ann_id]

    ends = {kind, "rejected", "error", "cancelled", "expired"}
    msgs = recorder.wait_for(lambda msgs: any(e["event"] in ends for e in mine(msgs)), timeout)
    event = next(e for e in mine(msgs) if e["event"] in ends)
    assert event["event"] == kind, event
    return event


@pytest.fixture
def lexicon(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text("words:\n  Qwen3: Qwen three\n")
    return path


@pytest.fixture
def texts_and_service(tmp_path, mosquitto, lexicon):
    config = tmp_path / "qwen3tts.yaml"
    config.write_text(
        json.dumps(
            {
                "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
                "announcements": {"spool_dir": str(tmp_path / "spool")},
                "audio": {"lead_in_ms": 0, "tail_ms": 0, "chime_normal": "none", "jitter_buffer_ms": 0},
                "thermal": {"enabled": False},
                "voice": {"voice": "ryan", "language": "english"},
                "text": {"lexicon": str(lexicon)},
            }
        )
    )
    engine = fake_engine()
    texts: list[str] = []
    submit = engine.submit

    def spy(request):
        texts.append(request.text)
        return submit(request)

    engine.submit = spy
    runtime = SimpleNamespace(
        engine=engine,
        spec=SimpleNamespace(
            speakers=("ryan",), languages=("english", "german"), size="0.6b", variant="custom_voice",
            supports_instruct=False,
        ),
        plan=SimpleNamespace(summary=lambda: {"talker": "CPU"}, decode_paths=lambda: {"talker": "plugin"}),
        manifest=SimpleNamespace(random_weights=True),
    )  # fmt: skip
    service = Service(load_settings(config), config_path=config, runtime=runtime, sink=RigSink())
    start_subscribed(service)
    yield texts, service
    service.stop()


@pytest.fixture
def recorder(mosquitto, recorder_factory):
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    recorder.wait_for(lambda msgs: any(m.topic.endswith("/status") for m in msgs), 10)
    return recorder


def say(recorder, **fields) -> None:
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps(fields), qos=1)


def test_the_lexicon_and_normalisation_shape_what_the_model_gets(texts_and_service, recorder):
    texts, _ = texts_and_service
    say(recorder, id="read", text=TEXT)
    wait_event(recorder, "read", "finished")
    assert texts == ["Qwen three leaves platform four at fourteen oh five."]


def test_normalize_false_sends_the_text_as_written_but_the_lexicon_still_applies(texts_and_service, recorder):
    texts, _ = texts_and_service
    say(recorder, id="raw", text=TEXT, normalize=False)
    wait_event(recorder, "raw", "finished")
    assert texts == ["Qwen three leaves platform 4 at 14:05."]


def test_a_language_tag_picks_the_normaliser_and_the_model_language(texts_and_service, recorder):
    texts, _ = texts_and_service
    say(recorder, id="de", text="Der Zug fährt um 14:05 von Gleis 3.", lang="de-DE")
    queued = wait_event(recorder, "de", "queued")
    wait_event(recorder, "de", "finished")
    assert queued["event"] == "queued"
    assert "14:05" not in texts[0] and "vierzehn" in texts[0]


def test_sighup_reloads_the_lexicon(texts_and_service, recorder, lexicon):
    texts, service = texts_and_service
    lexicon.write_text("words:\n  Qwen3: the Qwen three express\n")
    service.reload()
    say(recorder, id="after", text="Qwen3 now.", normalize=False)
    wait_event(recorder, "after", "finished")
    assert texts == ["the Qwen three express now."]
