"""INT8 weights, a u8 KV cache and the native path drift from the official f32 outputs: measured,
printed, bounded.

The numbers are written to docs/fidelity.md by `python -m qwen3tts.bench.fidelity`; this test prints
them for one golden case and fails if the drift grows past a few percent of the logit scale.
"""

import json
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

from qwen3tts.bench.fidelity import markdown, measure_case
from qwen3tts.runtime.native import load_library

pytestmark = [pytest.mark.reference, pytest.mark.slow]

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"


def test_int8_and_u8_drift_is_printed_and_stays_within_a_few_percent_of_the_logit_scale(
    tmp_path, tiny_models
):
    index = json.loads((GOLDEN / "index.json").read_text())
    case = next(c for c in index["cases"] if c["name"] == "cv-1.7b-instruct")
    # the session's checkpoint and bundles of the case (the parity and native tests use them too), where
    # measure_case looks for them before it makes its own
    shape = (case["variant"], case["shape"])
    (tmp_path / f"ckpt-{case['checkpoint']}").symlink_to(tiny_models.checkpoint(*shape, seed=case["seed"]))
    for weights in ("f32", "int8"):
        bundle = tiny_models.bundle(*shape, weights, seed=case["seed"])
        (tmp_path / f"bundle-{case['checkpoint']}-{weights}").symlink_to(bundle)
    with np.load(GOLDEN / case["file"]) as data:
        golden = {name: data[name] for name in data.files}
    core = ov.Core()
    native = load_library(core=core)
    assert native is not None, "native/build/libqwen3tts_native.so: scripts/setup.sh builds it"
    results = {
        (r.weights, r.kv_cache, r.native): r for r in measure_case(case, golden, tmp_path, core, native)
    }
    print(markdown(list(results.values()), "pytest tests/integration/model/test_fidelity_drift.py -s"))
    exact = results[("f32", "f32", False)]
    assert exact.talker_logit_drift < 1e-4 and exact.frames_identical == exact.frames_total
    assert results[("f32", "u8", False)].talker_logit_drift < 0.01 * exact.logit_scale
    for kv_cache in ("f32", "u8"):
        int8 = results[("int8", kv_cache, False)]
        assert 0 < int8.talker_logit_drift < 0.05 * int8.logit_scale
        assert int8.predictor_logit_drift < 0.05 * int8.logit_scale
        # the native path (int16 activations, the native talker with its u8 or f16 cache, the fused frame)
        # adds little to what the INT8 weights cost
        on_native = results[("int8", "u8" if kv_cache == "u8" else "f16", True)]
        for drift in ("talker_logit_drift", "predictor_logit_drift"):
            assert getattr(on_native, drift) <= 1.25 * getattr(int8, drift) + 1e-3 * int8.logit_scale
