"""The 12 Hz codec decoder (codes -> 24 kHz waveform) as an OpenVINO graph that streams exactly.

Mirrors `Qwen3TTSTokenizerV2Decoder.forward` in `qwen_tts/core/tokenizer_12hz/
modeling_qwen3_tts_tokenizer_v2.py`. That decoder is strictly causal: every conv is left-padded
with zeros, every transposed conv is trimmed on the right, attention is causal with a sliding window.
So a chunk of frames can be decoded from a small carried state and the concatenated chunks equal one
full decode of all frames, at any length, at a constant cost per frame:

- each causal conv (pre_conv, ConvNeXt depthwise convs, decoder convs, dilated residual convs)
  carries its last (kernel - 1) * dilation input samples; zeros at the start are exactly the
  official left padding;
- each transposed conv with kernel > stride carries its last input frame, whose kernel tail
  overlaps the next chunk's first output samples;
- each transformer layer carries the keys and values of its sliding window, and `position` counts
  the frames decoded so far (codec_transformer.py).

`build_codec_chunk` makes a static-shape graph for `chunk_frames` frames with every state as an
input `past.<name>` and an output `present.<name>`; all chunk sizes share one state layout
(`state_layout`, codec_state.py), so a stream may mix them. Bundles ship the same decoder split in two
(`build_codec_frames`, `build_codec_samples`): the frame part, up to decoder block
FRAME_PART_BLOCKS, holds 90 % of the weights and has a dynamic frame axis, so one compiled graph
serves every chunk size (each compiled graph holds its own f32 copy of its weights); the sample part,
where most of the compute is, stays static, one graph per chunk size (a dynamic one costs ~25 % more
on CPU). `build_codec_full` is the decoder with the initial state folded in as constants and a
dynamic (or given) number of frames: one full decode.
The chunk graphs build SnakeBeta and the transposed convs in the forms the CPU runs fast, the full
decode in upstream's ops (codec_layers.py: `FAST`, `UPSTREAM`); every test that compares streamed
chunks with a full decode therefore also checks one formulation against the other.

Weights are the release keys of `speech_tokenizer/model.safetensors` (`decoder.*`), as float32.
Layouts: codes [B, T, Q]; conv activations [B, C, samples]; transformer activations [B, T, H]. B is 1
for the full decode; a chunk graph may decode B streams at once, each row with its own state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.model.graphs.codec_layers import (
    FAST,
    UPSTREAM,
    LayerForms,
    causal_conv,
    convnext_block,
    decoder_block,
)
from qwen3tts.model.graphs.codec_state import State
from qwen3tts.model.graphs.codec_transformer import transformer
from qwen3tts.model.graphs.layers import (
    Output,
    const,
    i64,
    named_parameter,
    named_result,
)
from qwen3tts.model.spec import CodecDecoderSpec

CODES = "codes"  # input [B, T, num_quantizers] i64: audio codes 0..codebook_size-1
AUDIO = "audio"  # output [B, T * decode_upsample_rate] f32 in [-1, 1], 24 kHz
HIDDEN = "hidden"  # between the two parts: [B, channels, T * samples per frame] after FRAME_PART_BLOCKS

# Decoder blocks in the frame part (see build_codec_frames): block 1 ends at 32 samples per frame and
# holds, with everything before it, 90 % of the weights but 25 % of the FLOPs.
FRAME_PART_BLOCKS = 1

_PREFIX = "decoder."
_USAGE_EPS = 1e-5  # EuclideanCodebook.epsilon


# ---------------------------------------------------------------- blocks


def _quantizer_decode(codes: Output, spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray]) -> ov.Node:
    """SplitResidualVectorQuantizer.decode: codes [B, T, Q] -> [B, codebook_dim, T].

    All Q codebook tables (embedding_sum / clamp(cluster_usage)) are stacked into one
    [Q * codebook_size, codebook_dim / 2] table; code q of a frame indexes row q * codebook_size + code.
    """
    tables = []
    for q in range(spec.num_quantizers):
        group, i = (
            ("rvq_first", q)
            if q < spec.num_semantic_quantizers
            else ("rvq_rest", q - spec.num_semantic_quantizers)
        )
        book = f"{_PREFIX}quantizer.{group}.vq.layers.{i}._codebook"
        usage = np.maximum(weights[f"{book}.cluster_usage"], np.float32(_USAGE_EPS))
        tables.append(weights[f"{book}.embedding_sum"] / usage[:, None])
    table = const(np.concatenate(tables, 0), name=f"{_PREFIX}quantizer.codebooks")  # [Q * V, D/2]
    offsets = i64(np.arange(spec.num_quantizers) * spec.codebook_size)  # [Q]
    vectors = ops.gather(table, ops.add(codes, offsets), i64(0))  # [B, T, Q, D/2]
    first = _sum_codebooks(vectors, 0, spec.num_semantic_quantizers)  # [B, T, D/2]
    rest = _sum_codebooks(vectors, spec.num_semantic_quantizers, spec.num_quantizers)  # [B, T, D/2]
    hidden = ops.add(
        _project(first, weights, f"{_PREFIX}quantizer.rvq_first.output_proj.weight"),
        _project(rest, weights, f"{_PREFIX}quantizer.rvq_rest.output_proj.weight"),
    )  # [B, T, D]
    return ops.transpose(hidden, i64([0, 2, 1]))  # [B, D, T]


def _sum_codebooks(vectors: Output, begin: int, end: int) -> ov.Node:
    picked = ops.slice(vectors, i64([begin]), i64([end]), i64([1]), i64([2]))  # [B, T, end - begin, D/2]
    return ops.reduce_sum(picked, i64([2]), keep_dims=False)  # [B, T, D/2]


def _project(x: Output, weights: Mapping[str, np.ndarray], key: str) -> ov.Node:
    """A bias-free 1x1 Conv1d ([out, in, 1]) applied as a matmul on [B, T, in]."""
    return ops.matmul(x, const(weights[key][:, :, 0], name=key), False, True)  # [B, T, out]


# ---------------------------------------------------------------- builders


def _decode_frames(
    codes: Output,
    spec: CodecDecoderSpec,
    weights: Mapping[str, np.ndarray],
    state: State,
    forms: LayerForms,
    blocks: int,
) -> ov.Node:
    """codes [B, T, Q] -> the activations after decoder block `blocks` (0: after decoder.0)."""
    x = _quantizer_decode(codes, spec, weights)  # [B, codebook_dim, T]
    x = causal_conv(x, weights, f"{_PREFIX}pre_conv", state)  # [B, latent, T]
    x = transformer(x, spec, weights, state)  # [B, latent, T]
    for j, factor in enumerate(spec.upsampling_ratios):
        x = forms.trans_conv(x, weights, f"{_PREFIX}upsample.{j}.0", factor, state)  # [B, latent, S*f]
        x = convnext_block(x, weights, f"{_PREFIX}upsample.{j}.1", state)
    x = causal_conv(x, weights, f"{_PREFIX}decoder.0", state)  # [B, decoder_dim, S]
    for b, rate in enumerate(spec.upsample_rates[:blocks]):
        x = decoder_block(x, weights, f"{_PREFIX}decoder.{b + 1}", rate, state, forms)  # [B, C/2, S*rate]
    return x


def _decode_samples(
    x: Output,
    spec: CodecDecoderSpec,
    weights: Mapping[str, np.ndarray],
    state: State,
    forms: LayerForms,
    blocks: int,
) -> ov.Node:
    """The activations after decoder block `blocks` -> audio [B, samples]."""
    for b, rate in list(enumerate(spec.upsample_rates))[blocks:]:
        x = decoder_block(x, weights, f"{_PREFIX}decoder.{b + 1}", rate, state, forms)  # [B, C/2, S*rate]
    out_snake = len(spec.upsample_rates) + 1
    x = forms.snake(x, weights, f"{_PREFIX}decoder.{out_snake}")
    x = causal_conv(x, weights, f"{_PREFIX}decoder.{out_snake + 1}", state)  # [B, 1, samples]
    x = ops.clamp(x, -1.0, 1.0)
    return ops.reshape(x, i64([0, -1]), special_zero=True)  # [B, samples]


def _decode(
    codes: Output, spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], state: State, forms: LayerForms
) -> ov.Node:
    """Qwen3TTSTokenizerV2Decoder.forward: codes [B, T, Q] -> audio [B, T * decode_upsample_rate]."""
    x = _decode_frames(codes, spec, weights, state, forms, 0)
    return _decode_samples(x, spec, weights, state, forms, 0)


def build_codec_chunk(
    spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], chunk_frames: int, batch: int = 1
) -> ov.Model:
    """Graph decoding `chunk_frames` frames of `batch` streams from `past.*` to `present.*` state.

    Inputs: CODES [B, chunk_frames, Q] i64 and `past.<name>` for each `state_layout(spec)` entry,
    with B in place of the layout's leading 1. Outputs: AUDIO [B, chunk_frames *
    decode_upsample_rate] f32 and `present.<name>` (same shapes), B = `batch`. Row b is stream b:
    rows never mix. (On CPU one batch-8 call measured only 6-15 % cheaper per frame than 8 batch-1
    calls, since the convs are compute-bound either way; a dynamic B was 1.6-2x slower.)
    """
    if chunk_frames < 1:
        raise ValueError(f"chunk_frames must be >= 1, got {chunk_frames}")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    state = State(spec, streaming=True, batch=batch)
    codes = named_parameter([state.batch, chunk_frames, spec.num_quantizers], ov.Type.i64, CODES)
    audio = named_result(_decode(codes, spec, weights, state, FAST), AUDIO)
    return ov.Model([audio, *state.results], [codes, *state.parameters], f"codec_chunk_{chunk_frames}")


def build_codec_frames(
    spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], chunk_frames: int | None = None, batch: int = 1
) -> ov.Model:
    """The frame part of a chunk: CODES [B, T, Q] -> HIDDEN [B, C, T * hidden_rate(spec)].

    Quantizer, transformer, upsampling and the first FRAME_PART_BLOCKS decoder blocks: most of the
    weights, little of the compute. T is dynamic unless `chunk_frames` is given, so ONE compiled graph
    serves every chunk size (a static graph per size would hold its own f32 copy of these weights).
    Its `past.*` / `present.*` are the state entries of those layers.
    """
    state = State(spec, streaming=True, batch=batch)
    codes = named_parameter([batch, chunk_frames or -1, spec.num_quantizers], ov.Type.i64, CODES)
    hidden = named_result(_decode_frames(codes, spec, weights, state, FAST, FRAME_PART_BLOCKS), HIDDEN)
    return ov.Model([hidden, *state.results], [codes, *state.parameters], "codec_frames")


def build_codec_samples(
    spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], chunk_frames: int, batch: int = 1
) -> ov.Model:
    """The sample part of a `chunk_frames` chunk: HIDDEN -> AUDIO [B, chunk_frames * 1920], static.

    The remaining decoder blocks at 160 to 1920 samples per frame: few weights, most of the compute,
    which the CPU runs fastest with static shapes; one graph per chunk size, each with the state
    entries of its layers.
    """
    if chunk_frames < 1:
        raise ValueError(f"chunk_frames must be >= 1, got {chunk_frames}")
    state = State(spec, streaming=True, batch=batch)
    channels = spec.decoder_dim >> FRAME_PART_BLOCKS
    hidden = named_parameter([batch, channels, chunk_frames * hidden_rate(spec)], ov.Type.f32, HIDDEN)
    audio = named_result(_decode_samples(hidden, spec, weights, state, FAST, FRAME_PART_BLOCKS), AUDIO)
    return ov.Model([audio, *state.results], [hidden, *state.parameters], f"codec_samples_{chunk_frames}")


def hidden_rate(spec: CodecDecoderSpec) -> int:
    """HIDDEN samples per frame: the upsampling ratios and the frame part's decoder block rates."""
    return math.prod(spec.upsampling_ratios) * math.prod(spec.upsample_rates[:FRAME_PART_BLOCKS])


def build_codec_full(
    spec: CodecDecoderSpec, weights: Mapping[str, np.ndarray], num_frames: int | None = None
) -> ov.Model:
    """One full causal decode from a fresh stream: CODES [1, T, Q] -> AUDIO [1, T * 1920].

    T is dynamic unless `num_frames` is given. Equals the official `decoder(codes)` (not its
    300-frame `chunked_decode`, which loses exactness past 300 frames). Built from the upstream ops
    (`codec_layers.UPSTREAM`, slow on CPU): a reference for the fast chunk graphs, not for serving.
    """
    state = State(spec, streaming=False)
    codes = named_parameter([1, num_frames or -1, spec.num_quantizers], ov.Type.i64, CODES)
    audio = named_result(_decode(codes, spec, weights, state, UPSTREAM), AUDIO)
    return ov.Model([audio], [codes], "codec_full")
