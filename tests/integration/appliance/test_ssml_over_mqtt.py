"""SSML announcements through the whole daemon: a real mosquitto, the real engine on the tiny OpenVINO
bundle, a WAV-directory zone. What each element does to the audio the zone wrote, and the one `rejected`
a bad or hostile document gets.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from announcer_rig import start_subscribed
from mosquitto_broker import Mosquitto, Recorder
from ssml_documents import BREAK_750, HOSTILE, INVALID, longest_silence

from qwen3tts.appliance.audio.chimes import ChimeSet, read_sound
from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings

SITE = "ssml"
BLOCK = 960  # one 40 ms audio block at 24 kHz
FRAMES = 8  # frames per sentence: greedy sampling never ends the tiny model's speech early


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_models):
    tmp_path = tmp_path_factory.mktemp("ssml")
    broker = Mosquitto(tmp_path, persistence=False)
    broker.start()
    config = tmp_path / "qwen3tts.yaml"
    config.write_text(
        json.dumps(
            {
                "model": {"bundle": str(tiny_models.bundle("custom_voice", "tiny", "f32"))},
                "mqtt": {"host": broker.host, "port": broker.port, "site": SITE, "discovery": False},
                "announcements": {"spool_dir": str(tmp_path / "spool")},
                "audio": {
                    "sink": "wav",
                    "wav_dir": str(tmp_path / "wav"),
                    "lead_in_ms": 0,
                    "tail_ms": 0,
                    "chime_normal": "none",
                    # levelling scales every sample; these tests look for exact sounds and silences
                    # where the markup puts them (loudness has its own tests)
                    "loudness": {"enabled": False},
                },
                "thermal": {"enabled": False},
                "engine": {"max_frames": FRAMES, "temperature": 0},
                "cache": {"enabled": False},
            }
        )
    )
    service = Service(load_settings(config), config_path=config)
    start_subscribed(service)
    recorder = Recorder(broker, [f"qwen3tts/{SITE}/event"])
    yield service, recorder, tmp_path / "wav"
    recorder.close()
    service.stop()
    broker.stop()


def say(recorder: Recorder, body: dict | str) -> None:
    payload = body if isinstance(body, str) else json.dumps(body)
    recorder.publish(f"qwen3tts/{SITE}/say", payload, qos=1)


def events(recorder: Recorder, ann_id: str) -> list[dict]:
    found = [json.loads(m.payload) for m in recorder.on(f"qwen3tts/{SITE}/event")]
    return [e for e in found if e.get("id") == ann_id]


def final(recorder: Recorder, ann_id: str, timeout: float = 120) -> dict:
    ends = {"finished", "rejected", "error", "cancelled", "expired"}
    recorder.wait_for(lambda _: any(e["event"] in ends for e in events(recorder, ann_id)), timeout)
    return next(e for e in events(recorder, ann_id) if e["event"] in ends)


def written(wav_dir, ann_id: str) -> np.ndarray:
    [path] = [p for p in wav_dir.iterdir() if p.name.endswith(f"-{ann_id}.wav")]
    return read_sound(path)


def test_a_break_is_750_ms_of_silence_in_the_zones_audio(daemon):
    _, recorder, wav_dir = daemon
    say(recorder, {"id": "gap", "text": BREAK_750})
    assert final(recorder, "gap")["event"] == "finished"
    audio = written(wav_dir, "gap")
    longest, start = longest_silence(audio)
    assert abs(longest - 18000) <= BLOCK, longest
    assert longest_silence(np.delete(audio, np.s_[start : start + longest]))[0] < BLOCK  # only one
    before, after = audio[:start], audio[start + longest :]  # between two sentences of speech
    assert 0 < len(before) <= FRAMES * 1920 and 0 < len(after) <= FRAMES * 1920
    assert np.abs(before).max() > 0.01 and np.abs(after).max() > 0.01


def test_an_audio_element_plays_the_configured_emergency_chime_between_the_sentences(daemon):
    service, recorder, wav_dir = daemon
    text = '<speak>Attention please.<audio src="emergency">a bell</audio>Leave now.</speak>'
    say(recorder, {"id": "bell", "text": text})
    assert final(recorder, "bell")["event"] == "finished"
    audio = written(wav_dir, "bell")
    chime = ChimeSet.from_settings(service.settings.audio).by_priority["emergency"]
    frame = 1920  # the first sentence is whole frames of speech; the chime follows at once
    found = [
        at for at in range(frame, FRAMES * frame + 1, frame)
        if np.allclose(audio[at : at + len(chime)], chime, atol=2 / 32767)
    ]  # fmt: skip
    assert len(found) == 1, found
    assert 0 < len(audio) - found[0] - len(chime) <= FRAMES * frame  # the second sentence after it


def test_lang_and_voice_reach_the_engine_request_of_their_piece(daemon, monkeypatch):
    service, recorder, _ = daemon
    engine, requests = service.runtime.engine, []
    submit = engine.submit
    monkeypatch.setattr(engine, "submit", lambda request: requests.append(request) or submit(request))
    first, *_, speaker = service.catalog.speakers
    text = (f'<speak>Good morning. <lang xml:lang="de">Guten Morgen.</lang>'
            f'<voice name="{speaker.upper()}">Welcome.</voice></speak>')  # fmt: skip
    say(recorder, json.dumps({"id": "lv", "text": text, "voice": first}))
    assert final(recorder, "lv")["event"] == "finished"
    mine = [(r.text, r.language, r.speaker) for r in requests if r.id.startswith("lv#")]
    assert mine == [
        ("Good morning.", "auto", first),
        ("Guten Morgen.", "german", first),
        ("Welcome.", "auto", speaker),
    ]  # auto: the configured language


def test_ssml_true_reads_a_document_and_an_unknown_element_is_a_warning(daemon):
    _, recorder, _ = daemon
    body = {"id": "warn", "ssml": True, "text": "  <speak>Hello <blink>there</blink>.</speak>"}
    say(recorder, body)
    assert final(recorder, "warn")["event"] == "finished"
    [queued] = [e for e in events(recorder, "warn") if e["event"] == "queued"]
    assert any("<blink> is not supported" in w for w in queued["warnings"]), queued


@pytest.mark.parametrize(("text", "reason"), [*INVALID, *HOSTILE])
def test_bad_and_hostile_documents_are_one_rejected_at_once_and_the_daemon_speaks_on(daemon, text, reason):
    _, recorder, _ = daemon
    ann_id = f"refused-{[*INVALID, *HOSTILE].index((text, reason))}"
    say(recorder, {"id": ann_id, "text": text})
    event = final(recorder, ann_id, timeout=5)
    assert event["event"] == "rejected" and reason in event["reason"], event
    say(recorder, {"id": f"after-{ann_id}", "text": "<speak>Still here.</speak>"})
    assert final(recorder, f"after-{ann_id}")["event"] == "finished"
    assert [e["event"] for e in events(recorder, ann_id)] == ["rejected"]  # and nothing else
