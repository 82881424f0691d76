"""Issue 24 item 5 over the real tiny bundle (real OpenVINO): the random model rarely samples its
end-of-speech token, so with a small frame cap every sentence runs away; its `finished` event says so in
`warnings`, and the engine's counter behind /metrics goes up by one per sentence."""

from __future__ import annotations

from dataclasses import replace

from announcer_rig import Rig, rig_settings

from qwen3tts.runtime.loader import load_runtime
from qwen3tts.servers.metrics import ServerMetrics
from qwen3tts.settings import DeviceSettings, EngineSettings, ModelSettings

CAPPED = "qwen3tts_sentences_frame_capped_total"


def test_an_announcement_whose_sentences_hit_the_frame_cap_says_so_and_counts(tmp_path, tiny_models):
    bundle = tiny_models.bundle("custom_voice", "tiny", "f32")
    settings = replace(
        rig_settings(tmp_path),
        model=ModelSettings(bundle=bundle),
        engine=replace(EngineSettings(), max_frames=6, temperature=0),
        devices=replace(DeviceSettings(), inference_precision="f32"),
    )
    runtime = load_runtime(bundle, settings)
    metrics = ServerMetrics(runtime.engine)
    before = metrics.registry.get_sample_value(CAPPED)
    rig = Rig(tmp_path, settings, runtime.engine).start()
    try:
        rig.say("cap", "Mind the gap. Stand clear of the doors.")
        rig.wait_for("cap", "finished", timeout=240)
    finally:
        rig.close()
    [warnings] = [w for i, event, w in rig.log.warnings if (i, event) == ("cap", "finished")]
    assert [w.split(" was")[0] for w in warnings] == ["sentence 1", "sentence 2"]
    assert all("frame cap (5 frames" in w for w in warnings), warnings
    assert before == 0 and metrics.registry.get_sample_value(CAPPED) == 2
