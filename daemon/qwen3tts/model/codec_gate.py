"""Build-time SNR gate: a lossy codec variant enters the bundle only if it measures >= MIN_SNR_DB here.

The codec's output is audio, so a variant is judged by what it does to the waveform: random codes
streamed through the split codec (the frame part, then the largest chunk's sample part), once exact
(f32) and once with the variant's sample part, SNR = 10 log10(sum ref^2 / sum (out - ref)^2). The
measurement runs on this checkpoint's own weights, so a trained checkpoint is gated on its own
numbers, not on the random test checkpoints of docs/fidelity.md.

`bf16-tail` lowers the last n convolutions to bf16 (graphs/codec_precision.py). They lie in the
sample part (decoder blocks 2-4 and the output convolution), so a variant is one alternative sample
part per chunk size, sharing the exact frame part. A binary search on one set of codes finds the
largest n whose SNR stays >= MIN_SNR_DB + SEARCH_MARGIN_DB; the gate then measures that n on
held-out codes (another seed) and steps n down until it passes. The SNR recorded in the manifest is
the held-out one. Without bf16 on the building CPU the plugin runs bf16 types as f32, so nothing
can be measured and no variant is built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import openvino as ov

from qwen3tts.model import bundle as layout
from qwen3tts.model.graphs.codec import (
    AUDIO,
    CODES,
    HIDDEN,
    hidden_rate,
)
from qwen3tts.model.graphs.codec_precision import conv_modules, last_convs, lower_convs_to_bf16
from qwen3tts.model.graphs.codec_state import PAST_PREFIX, PRESENT_PREFIX, initial_state
from qwen3tts.model.spec import CodecDecoderSpec

log = logging.getLogger(__name__)

MIN_SNR_DB = 35.0  # any lossy codec precision must keep this against the exact decode (docs/fidelity.md)
SEARCH_MARGIN_DB = 1.0  # the search aims this far above the gate, so held-out codes usually pass too
BF16_TAIL = "bf16-tail"
GATE_FRAMES = 96  # held-out frames the recorded SNR is measured on (8 chunks of 12)
SEARCH_FRAMES = 48
EXACT = {"INFERENCE_PRECISION_HINT": "f32"}


def snr_db(reference: np.ndarray, output: np.ndarray) -> float:
    """10 log10(signal / error energy); inf when identical."""
    error = output.astype(np.float64) - reference.astype(np.float64)
    noise = float(np.sum(error**2))
    signal = float(np.sum(reference.astype(np.float64) ** 2))
    return float("inf") if noise == 0 else float(10 * np.log10(signal / noise))


def stream_decode(
    frame_part: ov.CompiledModel, sample_part: ov.CompiledModel, spec: CodecDecoderSpec, codes: np.ndarray
) -> np.ndarray:
    """PCM of codes [n, Q] (n a multiple of the sample part's chunk) through the split codec, state
    carried; each part reads and writes its own share of the state, as runtime/codec.py streams."""
    frames = sample_part.input(HIDDEN).get_partial_shape()[-1].get_length() // hidden_rate(spec)
    parts = [
        (part.create_infer_request(), _state_names(part), out)
        for part, out in ((frame_part, HIDDEN), (sample_part, AUDIO))
    ]
    state = initial_state(spec)
    pieces = []
    for start in range(0, len(codes) - frames + 1, frames):
        feeds = {CODES: codes[None, start : start + frames].astype(np.int64)}
        for request, names, output in parts:
            request.infer({**feeds, **{PAST_PREFIX + name: state[name] for name in names}})
            state.update({name: request.get_tensor(PRESENT_PREFIX + name).data.copy() for name in names})
            feeds = {HIDDEN: request.get_tensor(output).data.copy()}
        pieces.append(feeds[HIDDEN][0])  # the sample part's audio
    return np.concatenate(pieces)


def _state_names(compiled: ov.CompiledModel) -> list[str]:
    inputs = (port.get_any_name() for port in compiled.inputs)
    return [name[len(PAST_PREFIX) :] for name in inputs if name.startswith(PAST_PREFIX)]


def random_codes(spec: CodecDecoderSpec, frames: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, spec.codebook_size, (frames, spec.num_quantizers))


@dataclass(frozen=True)
class GateResult:
    bf16_convs: tuple[str, ...]
    total_convs: int
    snr_db: float


class Bf16TailSearch:
    """Measures bf16-tail candidates of one exact sample part (IR files of the bundle being built),
    decoded after the exact frame part."""

    def __init__(
        self,
        core: ov.Core,
        frames_xml: Path,
        samples_xml: Path,
        spec: CodecDecoderSpec,
        min_snr_db: float = MIN_SNR_DB,
        reference: Callable[[np.ndarray], np.ndarray] | None = None,
    ):
        self.core, self.samples_xml, self.spec, self.min_snr_db = core, samples_xml, spec, min_snr_db
        samples = core.read_model(samples_xml)
        self.total = len(conv_modules(core.read_model(frames_xml))) + len(conv_modules(samples))
        # The search never reaches past the sample part: the frame part is shared by every variant and
        # stays exact. If the gate would allow more bf16 convolutions than the sample part holds, the
        # variant stops at the whole sample part (22 of 33 for the 0.6B codec; its gate keeps 9).
        self.most = len(conv_modules(samples))
        chunk = samples.input(HIDDEN).get_partial_shape()[-1].get_length() // hidden_rate(spec)
        whole = {seed: -(-frames // chunk) * chunk for seed, frames in ((1, SEARCH_FRAMES), (2, GATE_FRAMES))}
        self._codes = {seed: random_codes(spec, frames, seed) for seed, frames in whole.items()}
        self._frame_part = core.compile_model(frames_xml, "CPU", EXACT)
        if reference is None:  # the stored graphs' own decode
            exact = core.compile_model(samples_xml, "CPU", EXACT)
            reference = lambda codes: stream_decode(self._frame_part, exact, spec, codes)  # noqa: E731
        self._reference = {seed: reference(codes) for seed, codes in self._codes.items()}

    def snr(self, count: int, seed: int) -> float:
        model = self.core.read_model(self.samples_xml)
        lower_convs_to_bf16(model, last_convs(model, count))
        variant = self.core.compile_model(model, "CPU", EXACT)
        output = stream_decode(self._frame_part, variant, self.spec, self._codes[seed])
        return snr_db(self._reference[seed], output)

    def run(self, report: Callable[[str], None]) -> GateResult | None:
        """The most bf16 convolutions that pass the gate on held-out codes, or None if not even one does."""
        low, high = 0, self.most  # invariant: `low` passes the search target (0 = exact always does)
        while low < high:
            middle = (low + high + 1) // 2
            value = self.snr(middle, seed=1)
            report(f"bf16 in the last {middle} of {self.total} convolutions: {value:.1f} dB (search)")
            if value >= self.min_snr_db + SEARCH_MARGIN_DB:
                low = middle
            else:
                high = middle - 1
        count = low
        while count > 0:
            value = self.snr(count, seed=2)
            report(f"bf16 in the last {count} of {self.total} convolutions: {value:.1f} dB (held-out gate)")
            if value >= self.min_snr_db:
                model = self.core.read_model(self.samples_xml)
                return GateResult(tuple(last_convs(model, count)), self.total, value)
            count -= max(1, count // 4)
        return None


def build_bf16_tail(
    bundle_dir: Path,
    spec: CodecDecoderSpec,
    chunks,
    report: Callable[[str], None],
    reference: Callable[[np.ndarray], np.ndarray] | None = None,
):
    """Measure, and if it passes write the bf16-tail sample parts beside the exact ones.

    `reference` decodes codes with the checkpoint's f32 weights (model/codec_storage.py), what the
    variant's SNR is measured against; without it, against the stored graphs' own decode.
    Returns the manifest entry (layout.CodecVariant) or None, with the reason reported.
    """
    try:
        return _build_bf16_tail(bundle_dir, spec, chunks, report, reference)
    except Exception as exc:  # an optional, lossy variant never fails the build of the exact bundle
        log.warning("codec bf16-tail: not built: %s", exc)
        for partial in bundle_dir.glob(f"codec_samples_*.{BF16_TAIL}.*"):
            partial.unlink()
        report(f"codec bf16-tail: not built: {type(exc).__name__}: {exc}")
        return None


def _build_bf16_tail(bundle_dir: Path, spec: CodecDecoderSpec, chunks, report, reference):
    core = ov.Core()
    if "BF16" not in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        report("codec bf16-tail: not built, this CPU has no bf16 (the gate cannot be measured here)")
        return None
    frames_xml, samples = (
        bundle_dir / layout.CODEC_FRAMES_XML,
        bundle_dir / layout.codec_samples_xml(max(chunks)),
    )
    result = Bf16TailSearch(core, frames_xml, samples, spec, reference=reference).run(report)
    if result is None:
        report(f"codec bf16-tail: not built, no bf16 convolution keeps {MIN_SNR_DB:.0f} dB SNR")
        return None
    for frames in chunks:
        model = core.read_model(bundle_dir / layout.codec_samples_xml(frames))
        lower_convs_to_bf16(model, result.bf16_convs)
        ov.save_model(model, bundle_dir / layout.codec_samples_xml(frames, BF16_TAIL), compress_to_fp16=False)
    variant = layout.CodecVariant(
        BF16_TAIL, ("BF16",), round(result.snr_db, 2), MIN_SNR_DB, result.bf16_convs, result.total_convs
    )
    report(f"codec variant {variant.describe()}")
    return variant
