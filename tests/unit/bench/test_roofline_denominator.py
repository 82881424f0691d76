"""bench/analysis.py's shares of the limit: each stage against its own measured read limit (or the
measured compute peak), the denominator named; no read limit, no memory-bound share."""

from __future__ import annotations

import pytest

from qwen3tts.bench import report
from qwen3tts.bench.analysis import BundleCosts, rooflines
from qwen3tts.bench.graph_cost import GraphCost
from qwen3tts.bench.machine import MachineLimits
from qwen3tts.bench.read_limit import ReadLimit
from qwen3tts.bench.timing_runner import Call
from qwen3tts.bench.workload import StepRecord

KINDS = {"talker": "int8_weights", "code_predictor": "int8_weights", "codec": "f32"}
PEAKS = {"int8_weights": 500e9, "f32": 100e9}
TALKER = GraphCost(weight_bytes_stored=500_000_000, weight_bytes_read=450_000_000, flops=900_000_000,
                   weight_bytes_footprint=449_000_000)  # fmt: skip
PREDICTOR = GraphCost(1_300_000_000, 1_200_000_000, 2_400_000_000, 110_000_000)
CODEC = GraphCost(40_000_000, 36_000_000, 60_000_000_000, 36_000_000)
KV_PER_TOKEN = 1000.0


def _costs() -> BundleCosts:
    return BundleCosts(TALKER, PREDICTOR, {12: CODEC}, KV_PER_TOKEN, 16, 128, 28, KINDS)


def _steps(count: int = 12) -> list[StepRecord]:
    """`count` batch-1 decode steps: talker 20 ms at context 100, code predictor 50 ms, one codec chunk."""
    steps = [
        StepRecord(0.08, (Call("talker", 0.020, 1, 1, (100,)), Call("code_predictor", 0.050, 1)))
        for _ in range(count)
    ]
    steps[-1] = StepRecord(0.3, (*steps[-1].calls, Call("codec", 0.240, 1, 12)))
    return steps


def _limits(read: dict[str, ReadLimit], unavailable: str | None = None) -> MachineLimits:
    return MachineLimits(read, dict(PEAKS), 32 << 20, 2, unavailable)


def test_the_footprints_measured_over_are_the_distinct_weight_bytes_of_each_stage():
    assert _costs().footprints() == {
        "talker": 449_000_000,
        "code_predictor": 110_000_000,
        "codec": 36_000_000,
    }


def test_each_decode_stage_is_judged_against_its_own_read_limit_and_names_it():
    read = {
        "talker": ReadLimit(25e9, 449_000_000, 2, "avx512", 10),  # DRAM
        "code_predictor": ReadLimit(50e9, 110_000_000, 2, "avx512", 10),  # cache
        "codec": ReadLimit(50e9, 36_000_000, 2, "avx512", 10),
    }
    lines = {stage: line.as_dict() for stage, line in rooflines(_steps(), _costs(), _limits(read)).items()}

    talker, predictor = lines["talker"], lines["code_predictor"]
    talker_bytes = TALKER.weight_bytes_read + 100 * KV_PER_TOKEN  # weights and the KV cache read
    assert talker["bound"] == "memory" and talker["read_limit_gb_per_s"] == pytest.approx(25.0)
    assert talker["share_of_limit"] == pytest.approx(talker_bytes / 25e9 / 0.020)
    assert talker["weight_gb_per_s"] == pytest.approx(TALKER.weight_bytes_read / 0.020 / 1e9)
    assert talker["weight_bytes_per_frame"] == pytest.approx(TALKER.weight_bytes_read)
    assert talker["denominator"] == read["talker"].describe()
    assert "449.0 MB" in talker["denominator"] and "avx512" in talker["denominator"]
    assert predictor["share_of_limit"] == pytest.approx(PREDICTOR.weight_bytes_read / 50e9 / 0.050)
    assert predictor["denominator"] == read["code_predictor"].describe()

    codec = lines["codec"]  # 60 GFLOP at 100 GFLOP/s: compute-bound, against the peak
    assert codec["bound"] == "compute" and "f32 matmul peak 100 GFLOP/s" in codec["denominator"]
    assert codec["share_of_limit"] == pytest.approx(0.6 / 0.240)
    assert codec["measured_ms_per_frame"] == pytest.approx(240 / 12)


def test_without_a_read_limit_the_decode_stages_get_no_share_and_say_why():
    reason = "native/build/libqwen3tts_native.so is not built"
    lines = {
        stage: line.as_dict() for stage, line in rooflines(_steps(), _costs(), _limits({}, reason)).items()
    }
    for stage in ("talker", "code_predictor"):
        assert lines[stage]["share_of_limit"] is None and lines[stage]["bound"] is None
        assert lines[stage]["denominator"] == reason and lines[stage]["read_limit_gb_per_s"] is None
        assert lines[stage]["weight_gb_per_s"] > 0  # what was measured is still reported
    assert lines["codec"]["bound"] == "compute" and lines["codec"]["share_of_limit"] == pytest.approx(2.5)


def test_the_markdown_names_the_denominators_or_the_missing_limit():
    read = {"talker": ReadLimit(25e9, 449_000_000, 2, "avx2", 10)}
    limits = rooflines(_steps(), _costs(), _limits(read, None))
    machine = {"read": {"talker": {"bytes_per_s": 25e9, "buffer_bytes": 449_000_000}}}
    assert "talker 25.0 GB/s over 449.0 MB" in report._read_limits(machine)
    missing = report._read_limits({"read": {}, "read_unavailable": "not built"})
    assert "NOT MEASURED (not built)" in missing
    assert limits["code_predictor"].as_dict()["share_of_limit"] is None  # no figure for it: no share
    assert report._percent(None) == "-" and report._percent(0.5) == "50 %"


def test_the_share_of_the_read_limit_stands_even_when_the_roofline_says_compute():
    """A loaded machine's matmul peak can fall below what a decode stage needs: the roofline then names
    the peak, and the read share still says how close the stage's reads came to the read limit."""
    read = {"talker": ReadLimit(25e9, 449_000_000, 2, "avx512", 10)}
    limits = _limits(read)
    limits.peak_flops["int8_weights"] = 1e9  # 0.9 GFLOP per step: 0.9 s at this peak
    talker = rooflines(_steps(), _costs(), limits)["talker"].as_dict()
    assert talker["bound"] == "compute" and "int8_weights matmul peak 1 GFLOP/s" in talker["denominator"]
    talker_bytes = TALKER.weight_bytes_read + 100 * KV_PER_TOKEN
    assert talker["share_of_read_limit"] == pytest.approx(talker_bytes / 25e9 / 0.020)
    attention = 4 * 16 * 128 * 100 * 28  # QK^T and AV: heads x head_dim x context x layers
    assert talker["share_of_limit"] == pytest.approx((TALKER.flops + attention) / 1e9 / 0.020)
