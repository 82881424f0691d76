"""ICL voice cloning against the official implementation (golden fixtures, f32).

The official `generate_voice_clone(ref_audio, ref_text, x_vector_only_mode=False)` encodes the
reference audio with the speech tokenizer's encoder, tokenizes the transcript, builds the ICL prompt,
generates, then decodes reference codes + generated codes and cuts the reference part off. Here the
same from the reference samples through our bundle and engine: encoder codes identical, greedy codes
of the whole generation identical, and the PCM the engine streams (the codec stream starts with the
reference codes as context and drops their samples) within CODEC_TOL of the official waveform from
the first sample on. (Prompt embeddings and the teacher-forced talker of
the ICL cases are checked with every other talker case in test_parity_golden.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from bundles import PARITY_OVERRIDES

from qwen3tts.engine.sequence import Request
from qwen3tts.model import bundle as layout
from qwen3tts.runtime.codec import StreamingCodec
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.runtime.speech_encoder import SpeechEncoder
from qwen3tts.settings_loader import load_settings

pytestmark = pytest.mark.reference

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
INDEX = json.loads((GOLDEN / "index.json").read_text(encoding="utf-8"))
F32 = {"INFERENCE_PRECISION_HINT": "f32"}
CODEC_TOL = 1e-3
SAMPLES_PER_FRAME = 1920  # 24 kHz / 12.5 frames per second
ENCODER_CASES = [c for c in INDEX["cases"] if c["kind"] == "speech_encoder"]
ICL_CASES = [c for c in INDEX["cases"] if c["kind"] == "talker" and c.get("ref_text")]


def arrays(case: dict) -> dict[str, np.ndarray]:
    with np.load(GOLDEN / case["file"]) as data:
        return {name: data[name] for name in data.files}


def test_the_fixtures_hold_icl_cases_for_both_base_shapes():
    assert {c["sample_rate"] for c in ENCODER_CASES} >= {24000, 16000}
    assert {(c["shape"], c["non_streaming"]) for c in ICL_CASES} == {
        (shape, mode) for shape in ("tiny", "tiny-1.7b") for mode in (True, False)
    }


@pytest.fixture(scope="module")
def runtimes(tiny_models):
    loaded = {}

    def runtime_for(case: dict):
        key = (case["variant"], case["shape"], case["seed"])
        if key not in loaded:
            bundle = tiny_models.bundle(case["variant"], case["shape"], "f32", case["seed"])
            loaded[key] = load_runtime(bundle, load_settings(None, list(PARITY_OVERRIDES)))
        return loaded[key]

    return runtime_for


@pytest.mark.parametrize("case", ENCODER_CASES, ids=lambda c: c["name"])
def test_speech_encoder_codes_equal_the_official_encode(case, tiny_models):
    golden = arrays(case)
    bundle = tiny_models.bundle(case["variant"], case["shape"], "f32", case["seed"])
    core = ov.Core()
    encoder = SpeechEncoder(
        core.compile_model(core.read_model(bundle / layout.SPEECH_ENCODER_XML), "CPU", F32)
    )
    codes = encoder.encode(golden["audio"], case["sample_rate"])
    assert codes.shape == golden["codes"].shape
    np.testing.assert_array_equal(codes, golden["codes"])


@pytest.mark.parametrize("case", ICL_CASES, ids=lambda c: c["name"])
def test_voice_encoder_derives_the_official_icl_inputs(case, runtimes):
    golden = arrays(case)
    voice = runtimes(case).voice_encoder.encode(
        golden["ref_audio"], case["ref_sample_rate"], case["ref_text"]
    )
    np.testing.assert_array_equal(voice.ref_codes, golden["ref_codes"])
    np.testing.assert_array_equal(voice.ref_text_ids, golden["ref_ids"][3:-2])  # official ref_id[:, 3:-2]
    diff = float(np.abs(voice.xvector - golden["xvector"]).max())
    print(f"{case['name']} x-vector: max |diff| {diff:.2e}")
    assert diff <= 1e-4


@pytest.mark.parametrize("case", ICL_CASES, ids=lambda c: c["name"])
def test_icl_generation_from_the_reference_audio_matches_the_official_voice_clone(case, runtimes):
    """The daemon path: the engine's streamed PCM is the official cut waveform from the first sample."""
    golden = arrays(case)
    runtime = runtimes(case)
    voice = runtime.voice_encoder.encode(golden["ref_audio"], case["ref_sample_rate"], case["ref_text"])
    runtime.prompt_builder.register_voice(f"icl-{case['name']}", voice)
    request = Request(
        id=case["name"],
        text=case["text"],
        language=case["language"],
        greedy=True,
        max_frames=33,
        non_streaming=case["non_streaming"],
        ref_audio=f"icl-{case['name']}",
    )
    handle = runtime.engine.submit(request)
    chunks = []
    while runtime.engine.step():
        chunks.extend(handle.ready_chunks()[0])
    chunks.extend(handle.ready_chunks()[0])
    expected = golden["greedy_codes"]
    assert expected.shape[0] >= 30
    np.testing.assert_array_equal(handle.frames, expected)

    # the official wrapper decodes reference + generated codes and cuts at int(ref / total * samples);
    # for these lengths that is exactly the reference's frames, which the engine's codec context drops
    assert case["waveform_offset"] == len(voice.ref_codes) * SAMPLES_PER_FRAME
    ours = np.concatenate(chunks)
    assert ours.shape == golden["waveform"].shape
    diff = float(np.abs(ours - golden["waveform"]).max())
    print(f"{case['name']} waveform: max |diff| {diff:.2e} (tolerance {CODEC_TOL:.0e})")
    assert diff <= CODEC_TOL
    # the reference as left context matters: decoded without it, the first frames differ
    fresh = StreamingCodec(runtime.runner.codec_models).decode(handle.frames[:4])
    assert float(np.abs(fresh - golden["waveform"][: fresh.size]).max()) > CODEC_TOL


def test_a_voice_used_again_resumes_the_codec_after_its_reference_and_sounds_the_same(
    tiny_models, monkeypatch
):
    case = next(c for c in ICL_CASES if c["shape"] == "tiny" and not c["non_streaming"])
    golden = arrays(case)
    bundle = tiny_models.bundle(case["variant"], case["shape"], "f32", case["seed"])
    runtime = load_runtime(bundle, load_settings(None, list(PARITY_OVERRIDES)))  # nothing decoded yet
    voice = runtime.voice_encoder.encode(golden["ref_audio"], case["ref_sample_rate"], case["ref_text"])
    runtime.prompt_builder.register_voice("again", voice)
    models = runtime.runner.codec_models
    decoded = []  # frames each codec chunk ran on, per request
    run = models.run
    monkeypatch.setattr(
        models, "run", lambda codes, state: (decoded[-1].append(len(codes)), run(codes, state))[1]
    )
    outputs = []
    for turn in ("first", "second"):
        decoded.append([])
        handle = runtime.engine.submit(
            Request(id=f"again-{turn}", text=case["text"], language=case["language"], greedy=True,
                    max_frames=33, non_streaming=False, ref_audio="again")
        )  # fmt: skip
        while runtime.engine.step():
            pass
        outputs.append(handle.result(0))
        np.testing.assert_array_equal(handle.frames, golden["greedy_codes"])
    for pcm in outputs:
        assert pcm.shape == golden["waveform"].shape
        assert float(np.abs(pcm - golden["waveform"]).max()) <= CODEC_TOL
    # the second request did not decode the reference's full chunks again
    assert sum(decoded[0]) - sum(decoded[1]) >= len(voice.ref_codes) - (min(models.chunk_sizes) - 1)
