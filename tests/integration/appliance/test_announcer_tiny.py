"""The announcer over the real tiny bundle (real OpenVINO): a burst of announcements is batched."""

from __future__ import annotations

from dataclasses import replace

from announcer_rig import Rig, rig_settings

from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings import DeviceSettings, ModelSettings


def test_a_burst_of_announcements_runs_with_more_than_one_request_per_decode_step(tmp_path, tiny_models):
    bundle = tiny_models.bundle("custom_voice", "tiny", "int8")
    settings = replace(
        rig_settings(tmp_path, lookahead_s=30.0),
        model=ModelSettings(bundle=bundle),
        devices=replace(DeviceSettings(), inference_precision="f32"),
    )
    runtime = load_runtime(bundle, settings)
    rig = Rig(tmp_path, settings, runtime.engine).start()
    try:
        texts = ["Platform one, please stand back.", "The next train is delayed.", "Thank you for waiting."]
        for n, text in enumerate(texts):
            rig.say(f"burst-{n}", f"{text} {text}")
        for n in range(len(texts)):
            rig.wait_for(f"burst-{n}", "finished", timeout=240)
        stats = rig.engine.stats()
    finally:
        rig.close()
    every_event = ["queued", "started", "first_audio", "finished"]
    assert [rig.kinds(f"burst-{n}") for n in range(3)] == [every_event] * 3
    assert stats.mean_batch > 1.0, stats
