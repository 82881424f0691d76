"""Registry round trip through MQTT on a tiny Base bundle (real OpenVINO, real mosquitto).

`qwen3tts voice add anna --audio F --text T`, then the whole Service: the `voices` topic lists anna,
an MQTT say with `"voice": "anna"` finishes and its engine requests spoke with anna's stored ICL
inputs (key `voice:anna`, the registry's reference codes), an unknown name is rejected and no name
ever reaches the engine as a path.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile
from announcer_rig import RigSink, start_subscribed
from bundles import PARITY_OVERRIDES

from qwen3tts.cli import main
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.service.service import Service
from qwen3tts.settings_loader import load_settings
from qwen3tts.voices import VoiceRegistry, bundle_hash

pytestmark = pytest.mark.slow  # a test here takes more than a few seconds (real daemons, brokers)

SITE = "reg"
RATE = 16000


def reference(path) -> None:
    t = np.arange(3 * RATE) / RATE
    wave = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 6)) * (0.5 + 0.5 * np.sin(6 * t))
    soundfile.write(path, (0.3 * wave / np.abs(wave).max()).astype(np.float32), RATE, subtype="PCM_16")


@pytest.fixture
def base_service(tmp_path, mosquitto, tiny_models):
    bundle = tiny_models.bundle("base", "tiny", "f32")
    config = tmp_path / "qwen3tts.yaml"
    config.write_text(
        json.dumps(
            {
                "model": {"bundle": str(bundle)},
                "mqtt": {"host": mosquitto.host, "port": mosquitto.port, "site": SITE, "discovery": False},
                "announcements": {"spool_dir": str(tmp_path / "state" / "spool")},
                "audio": {"lead_in_ms": 0, "tail_ms": 0, "chime_normal": "none", "jitter_buffer_ms": 0},
                "thermal": {"enabled": False},
                "engine": {"max_frames": 12},
                "cache": {"phrase_dir": str(tmp_path / "phrases")},
            }
        )
    )
    reference(tmp_path / "anna.wav")
    assert (
        voice_cli(config, "add", "anna", "--audio", str(tmp_path / "anna.wav"), "--text", "Hello there.") == 0
    )
    settings = load_settings(config, list(PARITY_OVERRIDES))
    runtime = load_runtime(bundle, settings)
    submitted = []
    submit = runtime.engine.submit
    runtime.engine.submit = lambda request: submitted.append(request) or submit(request)
    svc = Service(settings, config_path=config, runtime=runtime, sink=RigSink())
    start_subscribed(svc)
    yield svc, submitted, VoiceRegistry(tmp_path / "state" / "voices").get("anna", bundle_hash(bundle))
    svc.stop()


def voice_cli(config, *args) -> int:
    return main(
        ["--config", str(config), *(arg for o in PARITY_OVERRIDES for arg in ("--set", o)), "voice", *args]
    )


def event(recorder, ann_id, kind, timeout=120.0) -> dict:
    def found(msgs):
        return [
            e
            for m in msgs
            if m.topic.endswith("/event")
            for e in [json.loads(m.payload)]
            if e.get("id") == ann_id
        ]

    ends = (kind, "rejected", "error")
    msgs = recorder.wait_for(lambda msgs: any(e["event"] in ends for e in found(msgs)), timeout)
    return next(e for e in found(msgs) if e["event"] in ends)


def test_a_registered_voice_is_listed_and_speaks_an_mqtt_say_with_its_icl_inputs(
    base_service, mosquitto, recorder_factory
):
    service, submitted, anna = base_service
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    recorder.wait_for(lambda msgs: any(m.topic.endswith("/voices") for m in msgs), 20)
    voices = json.loads(recorder.on(f"qwen3tts/{SITE}/voices")[-1].payload)
    assert voices["voices"] == ["anna"]

    say = {"id": "cloned", "text": "Platform two.", "voice": "anna", "seed": 7}
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps(say), qos=1)
    assert event(recorder, "cloned", "finished")["event"] == "finished"
    mine = [r for r in submitted if r.id.startswith("cloned#")]
    assert mine and all(r.ref_audio == "voice:anna" and r.speaker is None and r.seed == 7 for r in mine)
    inputs = service.runtime.prompt_builder.voices["voice:anna"]
    assert inputs.icl
    np.testing.assert_array_equal(inputs.ref_codes, anna.ref_codes)
    np.testing.assert_array_equal(inputs.xvector, anna.xvector)

    recorder.publish(
        f"qwen3tts/{SITE}/say", json.dumps({"id": "path", "text": "Hi.", "voice": "/etc/passwd"})
    )
    assert event(recorder, "path", "finished")["event"] == "rejected"
    assert not [r for r in submitted if r.id.startswith("path#")]

    def cache_figures(msgs):
        return [json.loads(m.payload)["cache"] for m in msgs if m.topic.endswith("/status")]

    # The finished rendition went into the phrase cache, and the status says so.
    msgs = recorder.wait_for(lambda msgs: any(c.get("entries") == 1 for c in cache_figures(msgs)), 20)
    assert cache_figures(msgs)[-1]["max_bytes"] > 0

    # The same say without the phrase cache is synthesised again, its prompt's full KV blocks shared.
    again = {**say, "id": "again", "cache": False}
    recorder.publish(f"qwen3tts/{SITE}/say", json.dumps(again), qos=1)
    assert event(recorder, "again", "finished")["event"] == "finished"
    assert [r for r in submitted if r.id.startswith("again#")]

    def engine_figures(msgs):
        return [json.loads(m.payload)["engine"] for m in msgs if m.topic.endswith("/status")]

    msgs = recorder.wait_for(lambda msgs: any(e["prefix_hit_tokens"] > 0 for e in engine_figures(msgs)), 20)
    figures = next(e for e in engine_figures(msgs) if e["prefix_hit_tokens"] > 0)
    assert (
        figures["prefix_cached_blocks"] > 0
        and figures["prefix_queried_tokens"] >= figures["prefix_hit_tokens"]
    )


def test_sighup_reads_the_registry_again_and_voice_set_accepts_the_new_voice(
    base_service, mosquitto, recorder_factory, tmp_path
):
    service = base_service[0]
    recorder = recorder_factory(mosquitto, [f"qwen3tts/{SITE}/#"])
    recorder.wait_for(lambda msgs: any(m.topic.endswith("/voices") for m in msgs), 20)
    reference(tmp_path / "bob.wav")
    assert (
        voice_cli(service.config_path, "add", "bob", "--audio", str(tmp_path / "bob.wav"), "--x-vector-only")
        == 0
    )
    service.reload()  # what SIGHUP does

    def listed(msgs):
        return [json.loads(m.payload)["voices"] for m in msgs if m.topic.endswith("/voices")]

    recorder.wait_for(lambda msgs: ["anna", "bob"] in listed(msgs), 20)
    recorder.publish(f"qwen3tts/{SITE}/voice/set", "Bob", qos=1)  # what HA publishes
    answered = recorder.wait_for(lambda msgs: any(b'"voice_set"' in m.payload for m in msgs), 20)
    assert json.loads(next(m.payload for m in answered if b'"voice_set"' in m.payload))["voice"] == "bob"
    recorder.wait_for(lambda msgs: any(b'"voice": "bob"' in m.payload or b'"voice":"bob"' in m.payload
                                       for m in msgs if m.topic.endswith("/status")), 20)  # fmt: skip
    assert not service.runtime.prompt_builder.voices["voice:bob"].icl
