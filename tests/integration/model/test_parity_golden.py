"""Our OpenVINO bundle against the official PyTorch implementation (golden fixtures, f32).

Stage by stage (scripts/reference/README.md documents every array): prompt embeddings, teacher-forced
talker prefill and decode steps (stateful and PagedAttention), code-predictor logits, greedy codes end
to end through the engine, and the codec waveform. Float tolerances print the max difference; greedy
codes must be identical.
"""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from bundles import PARITY_OVERRIDES
from runtime_shelf import RuntimeShelf

from qwen3tts.engine.sequence import Request
from qwen3tts.model import bundle as layout
from qwen3tts.model.checkpoint import load_checkpoint
from qwen3tts.model.graphs import code_predictor as cp
from qwen3tts.model.graphs.codec import AUDIO, CODES, build_codec_full
from qwen3tts.model.graphs.talker import to_paged
from qwen3tts.model.tokenizer import TextTokenizer
from qwen3tts.runtime.codec import CodecChunkModels, StreamingCodec
from qwen3tts.runtime.paged_talker import PagedTalker
from qwen3tts.settings_loader import load_settings

pytestmark = pytest.mark.reference

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
INDEX = json.loads((GOLDEN / "index.json").read_text(encoding="utf-8"))
F32 = {"INFERENCE_PRECISION_HINT": "f32"}
TALKER_TOL = 1e-4
CODEC_TOL = 1e-3


def cases(kind: str) -> list[dict]:
    found = [c for c in INDEX["cases"] if c["kind"] == kind]
    assert found, f"no golden cases of kind {kind!r}: regenerate with scripts/reference/make_golden.sh"
    return found


def arrays(case: dict) -> dict[str, np.ndarray]:
    with np.load(GOLDEN / case["file"]) as data:
        return {name: data[name] for name in data.files}


def report(name: str, ours: np.ndarray, theirs: np.ndarray, tol: float) -> None:
    diff = float(np.abs(np.asarray(ours, np.float64) - theirs).max()) if theirs.size else 0.0
    print(f"{name}: max |diff| {diff:.2e} (tolerance {tol:.0e}, scale {float(np.abs(theirs).max()):.2f})")
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert diff <= tol, f"{name}: max |diff| {diff:.2e} > {tol:.0e}"


@pytest.fixture(scope="module")
def bundles(tiny_models):
    def bundle_for(case: dict) -> Path:
        return tiny_models.bundle(case["variant"], case["shape"], "f32", case["seed"])

    return bundle_for


@pytest.fixture(scope="module")
def module_compile_cache(tmp_path_factory) -> Path:
    """OpenVINO's compile cache for this module's process, as a daemon has one: the 16 cases share 5
    bundles, and the f32 code predictor (its 15 steps unrolled) compiles in 1.5 s of CPU, 0.3 s cached.
    A cached blob is the same compiled graph, so every comparison is the one made without it."""
    return tmp_path_factory.mktemp("openvino-cache")


@pytest.fixture(scope="module")
def overrides(module_compile_cache) -> list[str]:
    """PARITY_OVERRIDES for load_runtime, with the module's compile cache."""
    return [*PARITY_OVERRIDES, f"model.cache_dir={module_compile_cache}"]


@pytest.fixture(scope="module")
def core(module_compile_cache):
    core = ov.Core()
    core.set_property({"CACHE_DIR": str(module_compile_cache)})
    return core


@pytest.fixture(scope="module")
def prompt_builders(bundles, overrides, shelf):
    """The prompt builder of a runtime loaded once per bundle and text track for the module (the shelf's,
    which the greedy cases lend): it holds no state of a request (each test sets the golden voice it
    uses), and a load compiles every graph of the bundle, which these tests never run (1.8 s per case)."""

    @functools.cache
    def loaded(bundle: Path, extra: tuple[str, ...]):
        settings = load_settings(None, [*overrides, *extra])
        runtime = shelf.lend(bundle, settings)
        shelf.give_back(bundle, settings, runtime)
        return runtime.prompt_builder

    return lambda case, *extra: loaded(bundles(case), extra)


@pytest.fixture(scope="module")
def shelf() -> RuntimeShelf:
    """The greedy cases' runtimes, one per bundle, each case with an engine of its own (no prefix cache
    or queue carried over; the golden voice is set by each case)."""
    return RuntimeShelf()


@pytest.fixture(scope="module")
def compiled(core):
    """A graph of a bundle compiled once for the module, in f32 (the stateless ones: the code predictor)."""
    return functools.cache(lambda xml: core.compile_model(core.read_model(xml), "CPU", F32))


def use_golden_voice(builder, case: dict, golden: dict) -> str | None:
    """Base cases: the official x-vector (and, for ICL, reference codes and transcript ids) as the
    voice; returns the request's ref_audio key. The derivation of these inputs has its own tests."""
    from qwen3tts.runtime.cloning import VoiceInputs

    if "xvector" not in golden:
        return None
    if "ref_codes" not in golden:
        builder.xvectors = lambda _path: golden["xvector"]
        return None
    ref_ids = builder.tokenizer.encode_ref_text(case["ref_text"])
    assert list(ref_ids) == golden["ref_ids"][3:-2].tolist()  # the official ref_id[:, 3:-2]
    builder.register_voice(
        case["name"], VoiceInputs(golden["xvector"], golden["ref_codes"], np.array(ref_ids))
    )
    return case["name"]


def talker_request(case: dict, frames: int, ref_audio: str | None = None) -> Request:
    return Request(
        id=case["name"],
        text=case["text"],
        language=case["language"],
        speaker=case["speaker"],
        instruct=case["instruct"] if case["instruct_in_prompt"] else None,
        greedy=True,
        max_frames=frames + 1,
        non_streaming=case["non_streaming"],
        ref_audio=ref_audio,
    )


@pytest.mark.parametrize("case", cases("tokenizer"), ids=lambda c: c["name"])
def test_tokenizer_ids_equal_the_official_processor(case, tiny_models):
    golden = arrays(case)
    tokenizer = TextTokenizer.from_dir(tiny_models.checkpoint(case["variant"], case["shape"], case["seed"]))
    offsets = golden["offsets"]
    for i, text in enumerate(case["texts"]):
        assert tokenizer.encode(text) == golden["ids"][offsets[i] : offsets[i + 1]].tolist(), text


@pytest.mark.parametrize("case", cases("talker"), ids=lambda c: c["name"])
def test_prompt_embeddings_equal_the_official_prompt(case, prompt_builders):
    golden = arrays(case)
    builder = prompt_builders(case)
    ref_audio = use_golden_voice(builder, case, golden)
    prompt = builder(talker_request(case, case["num_frames"], ref_audio))
    report(f"{case['name']} prompt", prompt.embeddings, golden["prompt_embeds"], 1e-5)
    trailing = golden["trailing_text"]
    if case["non_streaming"]:  # official: trailing = [tts_pad]; ours: no trailing, then tts_pad
        assert prompt.trailing_text.shape[0] == 0
        report(f"{case['name']} tts_pad", prompt.pad_vector[None], trailing, 1e-5)
    else:
        report(f"{case['name']} trailing text", prompt.trailing_text, trailing, 1e-5)
    report(f"{case['name']} tts_pad", prompt.pad_vector, golden["tts_pad_embed"], 1e-5)


TRACK_CASES = ("cv-tiny-preset-english-streaming", "base-tiny-xvector")  # each against its variant's default


@pytest.mark.parametrize(
    "case", [c for c in cases("talker") if c["name"] in TRACK_CASES], ids=lambda c: c["name"]
)
def test_engine_text_track_gives_the_official_layout_against_the_variants_default(case, prompt_builders):
    golden = arrays(case)
    track = "whole" if case["non_streaming"] else "streamed"
    builder = prompt_builders(case, f"engine.text_track={track}")
    use_golden_voice(builder, case, golden)
    request = replace(talker_request(case, case["num_frames"]), non_streaming=None)  # the setting decides
    prompt = builder(request)
    report(f"{case['name']} prompt ({track})", prompt.embeddings, golden["prompt_embeds"], 1e-5)
    assert (prompt.trailing_text.shape[0] == 0) == case["non_streaming"]


def run_stateful_talker(core, bundle: Path, golden) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    model = core.compile_model(core.read_model(bundle / layout.TALKER_XML), "CPU", F32)
    request = model.create_infer_request()
    request.reset_state()
    embeds = golden["prompt_embeds"]
    length = embeds.shape[0]
    out = request.infer(
        {
            "inputs_embeds": embeds[None],
            "attention_mask": np.ones((1, length), np.int64),
            "position_ids": np.arange(length)[None],
            "beam_idx": np.zeros(1, np.int32),
        }
    )
    prefill_hidden, prefill_logits = out["last_hidden_state"][0], out["logits"][0, -1]
    hidden, logits = [], []
    for t, step in enumerate(golden["decode_inputs"]):
        out = request.infer(
            {
                "inputs_embeds": step[None, None],
                "attention_mask": np.ones((1, length + t + 1), np.int64),
                "position_ids": np.array([[length + t]]),
                "beam_idx": np.zeros(1, np.int32),
            }
        )
        hidden.append(out["last_hidden_state"][0, 0])
        logits.append(out["logits"][0, 0])
    return prefill_hidden, prefill_logits, np.array(hidden), np.array(logits)


@pytest.mark.parametrize("case", cases("talker"), ids=lambda c: c["name"])
def test_talker_prefill_and_teacher_forced_decode_match_the_official_talker(case, bundles, core):
    golden = arrays(case)
    prefill_hidden, prefill_logits, hidden, logits = run_stateful_talker(core, bundles(case), golden)
    report(f"{case['name']} prefill hidden", prefill_hidden, golden["prefill_hidden"], TALKER_TOL)
    report(f"{case['name']} prefill logits", prefill_logits, golden["prefill_logits"], TALKER_TOL)
    report(f"{case['name']} decode hidden", hidden, golden["decode_hidden"], TALKER_TOL)
    report(f"{case['name']} decode logits", logits, golden["decode_logits"], TALKER_TOL)


@pytest.mark.parametrize("case", cases("talker")[:2], ids=lambda c: c["name"])
def test_the_paged_talker_equals_the_stateful_one_with_an_f32_cache(case, bundles, core):
    golden = arrays(case)
    bundle = bundles(case)
    stateful = run_stateful_talker(core, bundle, golden)
    paged_model = core.compile_model(
        to_paged(core.read_model(bundle / layout.TALKER_XML)), "CPU", {**F32, "KV_CACHE_PRECISION": "f32"}
    )
    talker = PagedTalker(paged_model, num_blocks=8)
    table = [5, 2, 7]  # scrambled physical blocks
    embeds = golden["prompt_embeds"]
    logits, hidden = talker.step([(embeds, 0, table)])
    steps_logits, steps_hidden = [logits[0]], [hidden[0]]
    for t, step in enumerate(golden["decode_inputs"]):
        logits, hidden = talker.step([(step[None], embeds.shape[0] + t, table)])
        steps_logits.append(logits[0])
        steps_hidden.append(hidden[0])
    report(
        f"{case['name']} paged vs stateful logits",
        np.array(steps_logits),
        np.concatenate([stateful[1][None], stateful[3]]),
        TALKER_TOL,
    )
    report(f"{case['name']} paged vs stateful hidden", np.array(steps_hidden[1:]), stateful[2], TALKER_TOL)


@pytest.mark.parametrize("case", cases("talker"), ids=lambda c: c["name"])
def test_code_predictor_logits_and_greedy_codes_match_the_official_predictor(case, bundles, compiled):
    golden = arrays(case)
    model = compiled(bundles(case) / layout.CODE_PREDICTOR_XML)
    frames = golden["predictor_codes"]
    batch = frames.shape[0]
    out = model(
        {
            cp.PAST_HIDDEN: golden["predictor_hidden"].astype(np.float32),
            cp.CODE0: frames[:, 0].astype(np.int64),
            cp.NOISE: np.full((batch, 15, golden["predictor_logits"].shape[-1]), 0.5, np.float32),
            cp.TEMPERATURE: np.zeros(batch, np.float32),
            cp.TOP_K: np.full(batch, 50, np.int64),
            cp.TOP_P: np.ones(batch, np.float32),
        }
    )
    np.testing.assert_array_equal(out[cp.CODES], frames[:, 1:])
    report(f"{case['name']} code predictor logits", out[cp.LOGITS], golden["predictor_logits"], TALKER_TOL)


@pytest.mark.parametrize("case", cases("talker"), ids=lambda c: c["name"])
def test_greedy_codes_end_to_end_through_the_engine_equal_the_official_generate(
    case, bundles, overrides, shelf
):
    golden = arrays(case)
    bundle, settings = bundles(case), load_settings(None, overrides)
    runtime = shelf.lend(bundle, settings)
    ref_audio = use_golden_voice(runtime.prompt_builder, case, golden)
    engine = runtime.engine
    frames = 32 if not case["stopped_by_eos"] else case["num_frames"] + 8
    handle = engine.submit(talker_request(case, frames, ref_audio))
    while engine.step():
        pass
    shelf.give_back(bundle, settings, runtime)
    expected = golden["greedy_codes"]
    assert expected.shape[0] >= (30 if not case["stopped_by_eos"] else 1)
    np.testing.assert_array_equal(handle.frames, expected)


@pytest.mark.parametrize("case", cases("codec"), ids=lambda c: c["name"])
def test_codec_waveform_matches_the_official_decode_both_full_and_streamed(case, tiny_models, core):
    golden = arrays(case)
    checkpoint = load_checkpoint(tiny_models.checkpoint(case["variant"], case["shape"], case["seed"]))
    spec, weights = checkpoint.spec.codec, checkpoint.codec_weights
    full = core.compile_model(build_codec_full(spec, weights), "CPU", F32)
    waveform = full({CODES: golden["codes"][None].astype(np.int64)})[AUDIO][0]
    report(f"{case['name']} full decode", waveform, golden["waveform"], CODEC_TOL)
    stream = StreamingCodec(CodecChunkModels.compile(core, spec, weights, (4, 12), properties=F32))
    streamed = np.concatenate(
        [stream.decode(golden["codes"][:7]), stream.decode(golden["codes"][7:]), stream.flush()]
    )
    report(f"{case['name']} streamed decode", streamed, golden["waveform"], CODEC_TOL)


@pytest.mark.parametrize("case", cases("speaker_encoder"), ids=lambda c: c["name"])
def test_speaker_encoder_xvector_matches_the_official_one(case, bundles, core):
    from qwen3tts.runtime.speaker import SpeakerEncoder, mel_spectrogram

    golden = arrays(case)
    report(f"{case['name']} mel", mel_spectrogram(golden["audio"], case["sample_rate"]), golden["mel"], 1e-4)
    model = core.compile_model(core.read_model(bundles(case) / layout.SPEAKER_ENCODER_XML), "CPU", F32)
    xvector = SpeakerEncoder(model).xvector(golden["audio"], case["sample_rate"])
    report(f"{case['name']} x-vector", xvector, golden["xvector"], 1e-4)
