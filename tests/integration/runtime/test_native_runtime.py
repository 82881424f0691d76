"""The native op in the loaded runtime: which graphs get it, and what it changes against the plugin.

On the tiny INT8 bundle, with `devices.native_kernels: always` (the talker's INT8 MatMuls on the op, the
code predictor as the fused native frame) and the plugin's exact f32 product (`never` with an explicit
f32 precision) loaded side by side: the talker's teacher-forced logits and the code predictor's logits
agree within the stated tolerance (docs/fidelity.md), and the greedy codes agree wherever the plugin's
own top-1 margin is larger than that tolerance, i.e. wherever the codes are decided by the model rather
than by rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

from qwen3tts.engine.runner import TalkerChunk
from qwen3tts.model.graphs import code_predictor as cp
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.settings_loader import load_settings

CPU = ["devices.talker=[CPU]", "devices.codec=[CPU]"]
# |native - plugin| on logits, relative to the largest |logit|: measured 1e-4 (prefill) to 1e-3 (decode,
# where a u8 KV entry near a rounding boundary flips) on the tiny bundle; INT8 weights alone move them
# ~1e-2 (docs/fidelity.md)
LOGIT_TOLERANCE = 5e-3


@pytest.fixture(scope="module")
def runtimes(tiny_models):
    bundle = tiny_models.bundle(weights="int8")
    return {
        mode: load_runtime(bundle, load_settings(None, [*CPU, *extra]))
        for mode, extra in (
            ("always", ["devices.native_kernels=always", "devices.native_talker=never"]),
            # the plugin's exact product: an explicit f32 also turns off its dynamic int8 activations
            # (its default on VNNI CPUs, an error ~300x the op's)
            ("never", ["devices.native_kernels=never", "devices.inference_precision=f32"]),
        )
    }


def test_always_puts_the_talker_on_the_native_kernels_and_the_code_predictor_on_the_fused_frame(runtimes):
    native, plugin = runtimes["always"], runtimes["never"]
    isa = next(iter(native.plan.native.values()))
    assert native.plan.native == {"talker": isa} and native.plan.fused == {"code_predictor": isa}
    assert "INT8 MatMuls on native" in native.plan.describe()
    assert plugin.plan.native == {} and "native" not in plugin.plan.describe()
    # the warm-up gives the weight files' pages back either way (the op faults its weights back in)
    assert native.released_weight_bytes["talker"] > 0 and plugin.released_weight_bytes["talker"] > 0


def test_an_explicit_f32_precision_keeps_the_plugin_even_when_always_is_set(tiny_models):
    settings = load_settings(None, [*CPU, "devices.native_kernels=always", "devices.inference_precision=f32"])
    assert load_runtime(tiny_models.bundle(weights="int8"), settings).plan.native == {}


def _talker_logits(runtime, embeds):
    """Prefill of the whole sequence, then each position again as a decode step after its prefix."""
    runner = runtime.runner
    blocks = list(range(-(-len(embeds) // runner.block_size)))
    prefill, _ = runner.talker([TalkerChunk(0, embeds, 0, blocks)])
    steps = [runner.talker([TalkerChunk(0, embeds[p : p + 1], p, blocks)])[0] for p in range(4, len(embeds))]
    return prefill, np.concatenate(steps)


def test_talker_logits_agree_within_the_tolerance(runtimes):
    hidden = runtimes["never"].spec.talker.hidden_size
    embeds = np.random.default_rng(0).standard_normal((24, hidden)).astype(np.float32)
    (prefill_n, steps_n), (prefill_p, steps_p) = (
        _talker_logits(runtimes[m], embeds) for m in ("always", "never")
    )
    scale = np.abs(steps_p).max()
    for name, ours, theirs in (("prefill", prefill_n, prefill_p), ("decode", steps_n, steps_p)):
        diff = np.abs(ours - theirs).max()
        print(f"talker {name}: max |native - plugin| {diff:.2e} (scale {scale:.1f})")
        assert diff <= LOGIT_TOLERANCE * scale


def _predict(runtime, hidden, code0):
    batch = len(code0)
    vocab = runtime.spec.code_predictor.vocab_size
    feeds = {
        cp.PAST_HIDDEN: hidden,
        cp.CODE0: code0,
        cp.NOISE: np.full((batch, runtime.spec.code_predictor.num_code_groups - 1, vocab), 0.5, np.float32),
        cp.TEMPERATURE: np.zeros(batch, np.float32),
        cp.TOP_K: np.full(batch, 50, np.int64),
        cp.TOP_P: np.ones(batch, np.float32),
    }
    fused = runtime.runner._fused_code_predictor  # the runtime's own predictor: logits are an output too
    if fused is not None:
        codes, _, logits = fused.frame(*feeds.values(), logits=True)
        return codes, logits
    result = runtime.runner._code_predictor.infer(feeds)
    return result[cp.CODES].copy(), result[cp.LOGITS].copy()


def test_code_predictor_codes_agree_wherever_the_plugin_margin_exceeds_the_tolerance(runtimes):
    spec = runtimes["never"].spec
    rng = np.random.default_rng(1)
    hidden = rng.standard_normal((32, spec.talker.hidden_size)).astype(np.float32)
    code0 = rng.integers(0, spec.code_predictor.vocab_size, 32)
    codes_n, logits_n = _predict(runtimes["always"], hidden, code0)
    codes_p, logits_p = _predict(runtimes["never"], hidden, code0)
    scale = np.abs(logits_p).max()
    decided = 0
    for row in range(len(code0)):
        for step in range(codes_p.shape[1]):  # later steps follow the codes before them
            top2 = np.sort(logits_p[row, step])[-2:]
            if top2[1] - top2[0] <= 2 * LOGIT_TOLERANCE * scale:
                break  # a near tie: rounding may pick either, and every later step follows it
            assert codes_n[row, step] == codes_p[row, step], (row, step)
            assert np.abs(logits_n[row, step] - logits_p[row, step]).max() <= LOGIT_TOLERANCE * scale
            decided += 1
    print(f"{decided} of {codes_p.size} greedy codes decided by a margin above the tolerance: all equal")
    assert decided >= codes_p.size // 4  # the check compared something real
