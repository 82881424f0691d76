"""INT8 weights and a u8 KV cache drift from the official f32 outputs: measured, printed, bounded.

The numbers are written to docs/fidelity.md by `python -m qwen3tts.bench.fidelity`; this test prints
them for one golden case and fails if the drift grows past a few percent of the logit scale.
"""

import json
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

from qwen3tts.bench.fidelity import markdown, measure_case

pytestmark = pytest.mark.reference

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"


def test_int8_and_u8_drift_is_printed_and_stays_within_a_few_percent_of_the_logit_scale(tmp_path):
    index = json.loads((GOLDEN / "index.json").read_text())
    case = next(c for c in index["cases"] if c["name"] == "cv-1.7b-instruct")
    with np.load(GOLDEN / case["file"]) as data:
        golden = {name: data[name] for name in data.files}
    results = {(r.weights, r.kv_cache): r for r in measure_case(case, golden, tmp_path, ov.Core())}
    print(markdown(list(results.values()), "pytest tests/integration/model/test_fidelity_drift.py -s"))
    exact = results[("f32", "f32")]
    assert exact.talker_logit_drift < 1e-4 and exact.frames_identical == exact.frames_total
    assert results[("f32", "u8")].talker_logit_drift < 0.01 * exact.logit_scale
    for kv_cache in ("f32", "u8"):
        int8 = results[("int8", kv_cache)]
        assert 0 < int8.talker_logit_drift < 0.05 * int8.logit_scale
        assert int8.predictor_logit_drift < 0.05 * int8.logit_scale
