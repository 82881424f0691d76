"""The codec decoder graphs on a tiny random speech tokenizer: streaming equals full, causality, level.

Fidelity against the official implementation comes from the golden fixtures (separate test); here
the full decode is the reference that every chunking of the same codes must reproduce, through the
split graphs the bundles ship (one dynamic frame part, a static sample part per chunk size) and
through the whole chunk graphs of older bundles.
"""

from __future__ import annotations

import json

import numpy as np
import openvino as ov
import pytest

from qwen3tts.model.build import DEFAULT_CODEC_CHUNKS
from qwen3tts.model.graphs.codec import (
    AUDIO,
    CODES,
    HIDDEN,
    build_codec_chunk,
    build_codec_frames,
    build_codec_full,
    build_codec_samples,
    hidden_rate,
)
from qwen3tts.model.graphs.codec_state import PAST_PREFIX, PRESENT_PREFIX, initial_state, state_layout
from qwen3tts.model.safetensors_io import SafetensorsFile
from qwen3tts.model.spec_parse import parse_codec_spec
from qwen3tts.model.tiny.codec import write_speech_tokenizer
from qwen3tts.runtime.codec import CodecChunkModels, StreamingCodec

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
NUM_FRAMES = 600  # > 8 sliding windows of 72 frames: the attention state is exercised many times over
SAMPLES_PER_FRAME = 1920
STREAM_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def codec(tmp_path_factory):
    """(spec, decoder weights) of a freshly written tiny speech tokenizer."""
    out = tmp_path_factory.mktemp("speech_tokenizer")
    write_speech_tokenizer(out, "tiny", seed=0)
    spec = parse_codec_spec(json.loads((out / "config.json").read_text()))
    file = SafetensorsFile(out / "model.safetensors")
    return spec, {name: np.asarray(file[name]) for name in file if name.startswith("decoder.")}


@pytest.fixture(scope="module")
def full_decoder(codec):
    spec, weights = codec
    compiled = ov.Core().compile_model(build_codec_full(spec, weights), "CPU", F32)
    return lambda codes: compiled({CODES: codes[None]})[AUDIO][0]


@pytest.fixture(scope="module")
def chunk_models(codec):
    """The split layout at the chunk sizes bundles are built with (1, then 12)."""
    spec, weights = codec
    return CodecChunkModels.compile(
        ov.Core(), spec, weights, chunk_sizes=DEFAULT_CODEC_CHUNKS, properties=F32
    )


@pytest.fixture(scope="module")
def whole_models(codec):
    """The whole layout of older bundles: one static codes -> audio graph per chunk size."""
    spec, weights = codec
    core = ov.Core()
    compiled = {n: core.compile_model(build_codec_chunk(spec, weights, n), "CPU", F32) for n in (4, 12)}
    return CodecChunkModels(compiled, spec)


@pytest.fixture(scope="module")
def codes(codec):
    spec, _ = codec
    rng = np.random.default_rng(7)
    return rng.integers(0, spec.codebook_size, (NUM_FRAMES, spec.num_quantizers), dtype=np.int64)


@pytest.fixture(scope="module")
def full_audio(full_decoder, codes):
    return full_decoder(codes)


def _report(name: str, diff: float) -> None:
    print(f"{name}: max |diff| = {diff:.3g}")


def test_full_decode_has_one_frame_of_audible_unclipped_audio_per_frame(full_audio):
    assert full_audio.shape == (NUM_FRAMES * SAMPLES_PER_FRAME,)
    rms = float(np.sqrt(np.mean(full_audio.astype(np.float64) ** 2)))
    print(f"rms {rms:.4f}, peak {np.abs(full_audio).max():.3f}")
    assert 0.03 < rms < 0.3
    assert np.mean(np.abs(full_audio) >= 1.0) < 1e-3
    # every frame carries signal (no silent stretch, e.g. from a broken state carry)
    frame_rms = np.sqrt(np.mean(full_audio.reshape(NUM_FRAMES, -1) ** 2, axis=1))
    assert frame_rms.min() > 0.01


@pytest.mark.parametrize("layout", ["split", "whole"])
def test_the_bundle_chunk_schedule_with_carried_state_equals_the_full_decode(
    chunk_models, whole_models, codes, full_audio, layout
):
    models = chunk_models if layout == "split" else whole_models
    first, later = models.chunk_sizes  # split: the bundle default 1 then 12; whole: 4 then 12
    assert layout == "whole" or (first, later) == DEFAULT_CODEC_CHUNKS == (1, 12)
    state = models.initial_state()
    pieces, start = [], 0
    for size in [first] + [later] * ((NUM_FRAMES - first) // later):
        pcm, state = models.run(codes[start : start + size], state)
        pieces.append(pcm)
        start += size
    streamed = np.concatenate(pieces)
    assert int(state["position"][0]) == start
    diff = float(np.abs(streamed - full_audio[: streamed.size]).max())
    _report(f"{layout}: chunks {first}, {later}, {later}, ...", diff)
    assert diff < STREAM_TOLERANCE


@pytest.mark.parametrize(
    ("layout", "call_sizes"),
    [("split", (1,)), ("split", (3, 7, 11, 13, 1, 25)), ("split", (600,)), ("whole", (3, 7, 11, 13, 1, 25))],
)
def test_streaming_codec_at_any_call_sizes_equals_the_full_decode(
    chunk_models, whole_models, codes, full_audio, layout, call_sizes
):
    stream = StreamingCodec(chunk_models if layout == "split" else whole_models)
    pieces, start, turn = [], 0, 0
    while start < NUM_FRAMES - 5:  # leave a tail shorter than any chunk for flush()
        size = min(call_sizes[turn % len(call_sizes)], NUM_FRAMES - 5 - start)
        pieces.append(stream.decode(codes[start : start + size]))
        start, turn = start + size, turn + 1
        assert sum(p.size for p in pieces) == (start - stream.pending_frames) * SAMPLES_PER_FRAME
    pieces.append(stream.decode(codes[start:]))
    pieces.append(stream.flush())
    streamed = np.concatenate(pieces)
    assert streamed.shape == full_audio.shape
    diff = float(np.abs(streamed - full_audio).max())
    _report(f"{layout}: StreamingCodec calls {call_sizes}", diff)
    assert diff < STREAM_TOLERANCE
    assert stream.pending_frames == 0


@pytest.mark.parametrize(("context_frames", "call_sizes"), [(25, (4, 12)), (12, (1,)), (7, (5, 30))])
def test_a_context_is_decoded_first_and_only_the_following_frames_samples_come_out(
    chunk_models, codes, full_decoder, context_frames, call_sizes
):
    """Context + frames decoded in one go with the context's samples cut, at any chunk alignment."""
    context, frames = codes[:context_frames], codes[context_frames : context_frames + 41]
    stream = StreamingCodec(chunk_models, context)
    pieces, start, turn = [], 0, 0
    while start < len(frames):
        size = call_sizes[turn % len(call_sizes)]
        pieces.append(stream.decode(frames[start : start + size]))
        start, turn = start + size, turn + 1
    pieces.append(stream.flush())
    streamed = np.concatenate(pieces)
    expected = full_decoder(codes[: context_frames + 41])[context_frames * SAMPLES_PER_FRAME :]
    assert streamed.shape == (41 * SAMPLES_PER_FRAME,)
    diff = float(np.abs(streamed - expected).max())
    _report(f"context {context_frames}, calls {call_sizes}", diff)
    assert diff < STREAM_TOLERANCE
    # the context matters: without it the first frames sound different
    fresh = StreamingCodec(chunk_models).decode(frames[:4])
    assert float(np.abs(fresh - expected[: fresh.size]).max()) > 1e-3


def test_a_context_shorter_than_a_chunk_is_cut_even_when_the_stream_ends_at_once(
    chunk_models, codes, full_decoder
):
    stream = StreamingCodec(chunk_models, codes[:3])
    pcm = np.concatenate([stream.decode(codes[3:5]), stream.flush()])
    expected = full_decoder(codes[:5])[3 * SAMPLES_PER_FRAME :]
    assert pcm.shape == expected.shape
    assert float(np.abs(pcm - expected).max()) < STREAM_TOLERANCE


def test_streams_resumed_from_a_snapshot_after_the_context_continue_it_independently(chunk_models, codes):
    context = codes[:14]  # 12 decoded at once, 2 left pending in the snapshot
    primed = StreamingCodec(chunk_models, context)
    start = primed.snapshot()
    first, second = StreamingCodec.resume(chunk_models, start), StreamingCodec.resume(chunk_models, start)
    other = np.concatenate([second.decode(codes[100:110]), second.flush()])  # must not disturb `first`
    ours = np.concatenate([first.decode(codes[14:30]), first.flush()])
    reference = np.concatenate([primed.decode(codes[14:30]), primed.flush()])
    assert ours.shape == reference.shape == (16 * SAMPLES_PER_FRAME,)
    assert float(np.abs(ours - reference).max()) < 1e-6
    assert other.shape == (10 * SAMPLES_PER_FRAME,)
    again = np.concatenate([StreamingCodec.resume(chunk_models, start).decode(codes[14:30])])
    assert float(np.abs(again - ours[: again.size]).max()) < 1e-6  # the snapshot itself never changed


def test_flush_resets_the_stream_so_the_next_decode_starts_fresh(chunk_models, codes, full_decoder):
    stream = StreamingCodec(chunk_models)
    stream.decode(codes[:6])
    stream.flush()
    again = np.concatenate([stream.decode(codes[:9]), stream.flush()])
    diff = float(np.abs(again - full_decoder(codes[:9])).max())
    assert diff < STREAM_TOLERANCE


def test_changing_one_code_changes_the_audio_only_from_its_frame_on(codes, full_audio, full_decoder):
    frame = 250
    changed = codes.copy()
    changed[frame, 5] = (changed[frame, 5] + 1) % 2048
    audio = full_decoder(changed)
    boundary = frame * SAMPLES_PER_FRAME
    before = float(np.abs(audio[:boundary] - full_audio[:boundary]).max())
    after = float(
        np.abs(
            audio[boundary : boundary + SAMPLES_PER_FRAME]
            - full_audio[boundary : boundary + SAMPLES_PER_FRAME]
        ).max()
    )
    _report("before the changed frame", before)
    assert before <= 1e-6
    assert after > 1e-3


def test_chunk_graphs_expose_the_documented_state_layout(codec):
    spec, weights = codec
    model = build_codec_chunk(spec, weights, 4)
    inputs = {p.get_any_name(): tuple(p.get_partial_shape().to_shape()) for p in model.inputs}
    outputs = {p.get_any_name(): tuple(p.get_partial_shape().to_shape()) for p in model.outputs}
    assert inputs.pop(CODES) == (1, 4, spec.num_quantizers)
    assert outputs.pop(AUDIO) == (1, 4 * SAMPLES_PER_FRAME)
    layout = {s.name: s.shape for s in state_layout(spec)}
    assert inputs == {PAST_PREFIX + name: shape for name, shape in layout.items()}
    assert outputs == {PRESENT_PREFIX + name: shape for name, shape in layout.items()}
    # the attention window: 71 past frames per layer, keys and values
    key = layout["decoder.pre_transformer.layers.0.self_attn.key"]
    assert key == (1, spec.num_key_value_heads, spec.sliding_window - 1, spec.head_dim)
    assert all(not value.any() for value in initial_state(spec).values())


def test_the_split_parts_divide_the_state_and_meet_at_the_hidden_activations(codec):
    spec, weights = codec
    frames, samples = build_codec_frames(spec, weights), build_codec_samples(spec, weights, 12)

    def states(model, prefix):
        return {
            p.get_any_name()[len(prefix) :]
            for p in model.inputs + model.outputs
            if p.get_any_name().startswith(prefix)
        }

    front, back = states(frames, PAST_PREFIX), states(samples, PAST_PREFIX)
    assert front.isdisjoint(back) and front | back == {s.name for s in state_layout(spec)}
    assert states(frames, PRESENT_PREFIX) == front and states(samples, PRESENT_PREFIX) == back
    # one frame-part graph serves every chunk size: its frame axis is dynamic
    assert frames.input(CODES).get_partial_shape()[1].is_dynamic
    hidden = frames.output(HIDDEN).get_partial_shape()
    assert hidden[2].is_dynamic and samples.input(HIDDEN).get_partial_shape()[1] == hidden[1]
    assert samples.input(HIDDEN).get_shape()[2] == 12 * hidden_rate(spec)
    assert samples.output(AUDIO).get_shape() == [1, 12 * SAMPLES_PER_FRAME]

    # the frame part holds most of the weights, so holding it once is what saves memory
    def weight_bytes(model):
        return sum(op.get_byte_size() for op in model.get_ordered_ops() if op.get_type_name() == "Constant")

    assert weight_bytes(frames) > 4 * weight_bytes(samples)


def test_split_and_whole_layouts_decode_the_same_chunk_alike(codec, chunk_models, whole_models, codes):
    """The warm-up leaves no trace and both layouts give one chunk's audio and state the same."""
    chunk_models.warm_up()
    layout = {s.name for s in state_layout(codec[0])}
    for models in (chunk_models, whole_models):  # the split layout's state: both parts' entries together
        assert set(models.initial_state()) == layout
    split_pcm, split_state = chunk_models.run(codes[:12], chunk_models.initial_state())
    whole_pcm, whole_state = whole_models.run(codes[:12], whole_models.initial_state())
    assert float(np.abs(split_pcm - whole_pcm).max()) < STREAM_TOLERANCE
    assert set(split_state) == set(whole_state)
    for name, value in whole_state.items():  # conv tails reach |x| ~ 20: a tolerance relative to that
        scale = max(1.0, float(np.abs(value).max()))
        assert np.abs(split_state[name] - value).max() < STREAM_TOLERANCE * scale, name


def test_streaming_codec_rejects_codes_outside_the_codebook(chunk_models):
    stream = StreamingCodec(chunk_models)
    with pytest.raises(ValueError, match="codes must lie in"):
        stream.decode(np.full((4, 16), 2048))
    with pytest.raises(ValueError, match="integer"):
        stream.decode(np.zeros((4, 15), np.int64))


def test_write_speech_tokenizer_is_byte_identical_per_seed(tmp_path):
    names = ("config.json", "preprocessor_config.json", "model.safetensors")
    for directory, seed in (("a", 0), ("b", 0), ("c", 1)):
        write_speech_tokenizer(tmp_path / directory, "tiny", seed=seed)
    same = [(tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes() for n in names]
    assert all(same)
    assert (tmp_path / "a" / names[2]).read_bytes() != (tmp_path / "c" / names[2]).read_bytes()


def test_a_batched_chunk_graph_decodes_each_row_as_its_own_stream(codec, whole_models, codes):
    spec, weights = codec
    batched = ov.Core().compile_model(build_codec_chunk(spec, weights, 4, batch=2), "CPU", F32)
    # row 0: a fresh stream on frames 100..103; row 1: a stream that already decoded frames 0..7
    fresh = whole_models.initial_state()
    _, advanced = whole_models.run(codes[4:8], whole_models.run(codes[:4], fresh)[1])
    rows = [(codes[100:104], fresh), (codes[8:12], advanced)]
    feeds = {CODES: np.stack([c for c, _ in rows])}
    feeds.update({PAST_PREFIX + n: np.concatenate([s[n] for _, s in rows]) for n in fresh})
    result = batched(feeds)
    for b, (row_codes, row_state) in enumerate(rows):
        pcm, next_state = whole_models.run(row_codes, row_state)
        diff = float(np.abs(result[AUDIO][b] - pcm).max())
        _report(f"batched row {b}", diff)
        assert diff < STREAM_TOLERANCE
        assert int(result[PRESENT_PREFIX + "position"][b]) == int(next_state["position"][0])
        for name, value in next_state.items():
            assert np.abs(result[PRESENT_PREFIX + name][b : b + 1] - value).max() < STREAM_TOLERANCE, name


def test_chunk_graphs_avoid_the_slow_cpu_ops_and_the_full_decode_keeps_upstreams_ops(codec):
    # on CPU, Sin runs on a reference kernel and ConvolutionBackpropData on a gemm fallback: the chunk
    # graphs use a polynomial and polyphase convs; the full decode, their reference, keeps upstream's ops
    spec, weights = codec

    def op_counts(model):
        types = [op.get_type_name() for op in model.get_ordered_ops()]
        return {name: types.count(name) for name in ("Sin", "ConvolutionBackpropData", "DepthToSpace")}

    chunk = op_counts(build_codec_chunk(spec, weights, 4))
    full = op_counts(build_codec_full(spec, weights))
    front, back = (
        op_counts(build_codec_frames(spec, weights)),
        op_counts(build_codec_samples(spec, weights, 4)),
    )
    assert {name: front[name] + back[name] for name in chunk} == chunk  # the split graphs too
    num_trans_convs = len(spec.upsampling_ratios) + len(spec.upsample_rates)
    # the one Sin left in a chunk graph is RoPE's, over T x head_dim angles
    assert chunk == {"Sin": 1, "ConvolutionBackpropData": 0, "DepthToSpace": num_trans_convs}
    assert full["ConvolutionBackpropData"] == num_trans_convs and full["DepthToSpace"] == 0
    assert full["Sin"] == 1 + 7 * len(spec.upsample_rates) + 1  # RoPE, SnakeBeta: 7 per block + the last
