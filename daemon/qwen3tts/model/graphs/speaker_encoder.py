"""The Base variant's speaker encoder as an OpenVINO graph: mel spectrogram -> x-vector.

Mirrors `Qwen3TTSSpeakerEncoder` (ECAPA-TDNN) in `qwen_tts/core/models/modeling_qwen3_tts.py` and its
parts `TimeDelayNetBlock`, `SqueezeExcitationRes2NetBlock` (`Res2NetBlock` + `SqueezeExcitationBlock`)
and `AttentiveStatisticsPooling`. Activations are channels-first `[1, C, T]` as in the upstream Conv1d
code. Every upstream Conv1d uses `padding="same", padding_mode="reflect"`, so each convolution here is a
reflect Pad followed by an unpadded Convolution. The mel spectrogram itself is computed in numpy at run
time (runtime/speaker.py); this graph starts at the `[1, T, mel_dim]` features.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from qwen3tts.errors import CheckpointError
from qwen3tts.model.graphs.layers import const, i64, named_parameter, named_result
from qwen3tts.model.spec import SpeakerEncoderSpec

Output = ov.Output | ov.Node

MELS = "mels"  # [1, T, mel_dim] f32 log-mel features (T dynamic)
XVECTOR = "xvector"  # [1, enc_dim] f32 speaker embedding
PREFIX = "speaker_encoder"
# AttentiveStatisticsPooling clamps the variance before the square root.
STD_EPS = 1e-12


def build_speaker_encoder(spec: SpeakerEncoderSpec, weights: Mapping[str, np.ndarray]) -> ov.Model:
    """The x-vector graph for `spec`, with weights from the release keys `speaker_encoder.*`."""
    _check_widths(spec)
    mels = named_parameter([1, -1, spec.mel_dim], ov.Type.f32, MELS)
    x = ops.transpose(mels, i64([0, 2, 1]))  # (1, mel_dim, T)
    x = _tdnn(x, weights, f"{PREFIX}.blocks.0", spec.enc_dilations[0])
    block_outputs = []
    for i in range(1, len(spec.enc_channels) - 1):
        block = f"{PREFIX}.blocks.{i}"
        x = _se_res2net_block(x, weights, block, spec.enc_res2net_scale, spec.enc_dilations[i])
        block_outputs.append(x)
    # multi-layer feature aggregation: every SE-Res2Net output, stacked on the channel axis
    x = ops.concat(block_outputs, axis=1)  # (1, sum(channels[1:-1]) = channels[-1], T)
    x = _tdnn(x, weights, f"{PREFIX}.mfa", spec.enc_dilations[-1])
    pooled = _attentive_statistics_pooling(x, weights, f"{PREFIX}.asp")  # (1, 2 * channels[-1], 1)
    x = _conv1d(pooled, weights, f"{PREFIX}.fc")  # (1, enc_dim, 1)
    xvector = ops.squeeze(x, i64([2]))  # (1, enc_dim)
    model = ov.Model([named_result(xvector, XVECTOR)], [mels], "speaker_encoder")
    return model


def _check_widths(spec: SpeakerEncoderSpec) -> None:
    """The aggregation conv reads the concatenated block outputs; upstream would fail inside torch."""
    inner = spec.enc_channels[1:-1]
    if sum(inner) != spec.enc_channels[-1]:
        raise CheckpointError(
            f"speaker_encoder_config.enc_channels {list(spec.enc_channels)}: the last width must equal the "
            f"sum of the SE-Res2Net widths {list(inner)}"
        )
    if any(width % spec.enc_res2net_scale for width in inner):
        raise CheckpointError(
            f"speaker_encoder_config.enc_channels {list(inner)} must be divisible by enc_res2net_scale "
            f"{spec.enc_res2net_scale}"
        )


def _conv1d(x: Output, weights: Mapping[str, np.ndarray], prefix: str, dilation: int = 1) -> ov.Node:
    """Conv1d(padding="same", padding_mode="reflect") with bias; weight is (out, in, kernel)."""
    kernel = weights[f"{prefix}.weight"]
    bias = weights[f"{prefix}.bias"]
    total = dilation * (kernel.shape[2] - 1)
    if total:
        left = total // 2  # torch puts the odd sample of "same" padding on the right
        x = ops.pad(x, i64([0, 0, left]), i64([0, 0, total - left]), "reflect")  # (1, in, T + total)
    y = ops.convolution(x, const(kernel, name=f"{prefix}.weight"), [1], [0], [0], [dilation])
    channel_bias = const(np.reshape(bias, (1, -1, 1)), name=f"{prefix}.bias")  # (1, out, 1)
    return ops.add(y, channel_bias)


def _tdnn(x: Output, weights: Mapping[str, np.ndarray], prefix: str, dilation: int = 1) -> ov.Node:
    """TimeDelayNetBlock: reflect-padded Conv1d then ReLU; its conv is `<prefix>.conv`."""
    return ops.relu(_conv1d(x, weights, f"{prefix}.conv", dilation))


def _se_res2net_block(
    x: Output, weights: Mapping[str, np.ndarray], prefix: str, scale: int, dilation: int
) -> ov.Node:
    """SqueezeExcitationRes2NetBlock: tdnn1 -> Res2Net -> tdnn2 -> squeeze-excitation, plus the input."""
    h = _tdnn(x, weights, f"{prefix}.tdnn1")
    h = _res2net(h, weights, f"{prefix}.res2net_block", scale, dilation)
    h = _tdnn(h, weights, f"{prefix}.tdnn2")
    h = _squeeze_excitation(h, weights, f"{prefix}.se_block")
    return ops.add(h, x)


def _res2net(x: Output, weights: Mapping[str, np.ndarray], prefix: str, scale: int, dilation: int) -> ov.Node:
    """Res2NetBlock: channel group 0 passes through; group i > 0 is tdnn_i(group_i + output_{i-1})."""
    groups = ops.split(x, i64(1), scale).outputs()  # scale x (1, C / scale, T)
    outputs = [groups[0]]
    previous = None
    for i in range(1, scale):
        part = groups[i] if previous is None else ops.add(groups[i], previous)
        previous = _tdnn(part, weights, f"{prefix}.blocks.{i - 1}", dilation)
        outputs.append(previous)
    return ops.concat(outputs, axis=1)  # (1, C, T)


def _squeeze_excitation(x: Output, weights: Mapping[str, np.ndarray], prefix: str) -> ov.Node:
    """SqueezeExcitationBlock: per-channel gates from the time-averaged features."""
    mean = ops.reduce_mean(x, i64([2]), keep_dims=True)  # (1, C, 1)
    gate = ops.relu(_conv1d(mean, weights, f"{prefix}.conv1"))  # (1, se_channels, 1)
    gate = ops.sigmoid(_conv1d(gate, weights, f"{prefix}.conv2"))  # (1, C, 1)
    return ops.multiply(x, gate)


def _weighted_statistics(x: Output, weight: Output) -> tuple[ov.Node, ov.Node]:
    """Mean and std over time under per-frame weights that sum to 1; each (1, C, 1)."""
    mean = ops.reduce_sum(ops.multiply(x, weight), i64([2]), keep_dims=True)
    centred = ops.subtract(x, mean)
    variance = ops.reduce_sum(ops.multiply(weight, ops.multiply(centred, centred)), i64([2]), keep_dims=True)
    return mean, ops.sqrt(ops.maximum(variance, const(STD_EPS)))


def _attentive_statistics_pooling(x: Output, weights: Mapping[str, np.ndarray], prefix: str) -> ov.Node:
    """AttentiveStatisticsPooling for one unpadded utterance (upstream's mask is then all ones).

    The attention sees each frame next to the utterance's global mean and std, and the result is the
    attention-weighted mean and std concatenated: (1, 2C, 1).
    """
    shape = ops.shape_of(x)  # [1, C, T]
    num_frames = ops.convert(ops.gather(shape, i64([2]), i64(0)), ov.Type.f32)  # (1,)
    uniform = ops.divide(const(1.0), ops.reshape(num_frames, i64([1, 1, 1]), False))  # (1, 1, 1) = 1/T
    mean, std = _weighted_statistics(x, uniform)
    context = ops.concat([x, ops.broadcast(mean, shape), ops.broadcast(std, shape)], axis=1)  # (1, 3C, T)
    attention = ops.tanh(_tdnn(context, weights, f"{prefix}.tdnn"))  # (1, attention_channels, T)
    attention = _conv1d(attention, weights, f"{prefix}.conv")  # (1, C, T)
    attention = ops.softmax(attention, 2)
    mean, std = _weighted_statistics(x, attention)
    return ops.concat([mean, std], axis=1)  # (1, 2C, 1)
