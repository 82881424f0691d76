"""`qwen3tts bench` on a tiny bundle for a few frames: the report has every field with sane values.

Benchmarks are not tests: nothing here asserts how fast anything is, only that the measurements exist,
are consistent with each other and with the workload that was asked for.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from qwen3tts.bench.graph_cost import codec_chunk_costs, read_graph_cost
from qwen3tts.model import bundle as layout
from qwen3tts.model.bundle import read_manifest

FRAMES = 6
BATCHES = (1, 2)
STAGES = ("talker", "code_predictor", "codec", "host", "total")


@pytest.fixture(scope="module", params=["never", "always", "native talker"])
def bench_report(request, tiny_models, tmp_path_factory) -> dict:
    """never: every stage on the plugin's graphs; always: the code predictor as the fused native frame,
    which has no compiled graph (the report must stand without one); native talker: the talker's step
    native too, with its own KV cache and no compiled graph either."""
    bundle = tiny_models.bundle(weights="int8")
    out = tmp_path_factory.mktemp("bench")
    command = [
        sys.executable,
        "-m",
        "qwen3tts",
        "--set",
        f"devices.native_kernels={'never' if request.param == 'never' else 'always'}",
        "--set",
        f"devices.native_talker={'always' if request.param == 'native talker' else 'never'}",
        "--set",
        "devices.talker=[CPU]",
        "--set",
        "devices.codec=[CPU]",
        "bench",
        "--bundle",
        str(bundle),
        "--frames",
        str(FRAMES),
        "--repeats",
        "1",
        "--batch-sizes",
        ",".join(map(str, BATCHES)),
        "--prompt-tokens",
        "20",
        "--ttfa-concurrency",
        "1,2",
        "--ttfa-rounds",
        "1",
        "--json",
        str(out / "report.json"),
        "--plot",
        str(out / "report.png"),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    report["_stdout"] = result.stdout
    report["_native_kernels"] = request.param
    report["_png"] = (out / "report.png").read_bytes()[:8]
    return report


def _positive(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


@pytest.mark.slow
def test_every_batch_size_reports_per_stage_time_per_frame(bench_report):
    assert sorted(int(b) for b in bench_report["batches"]) == list(BATCHES)
    for batch, summary in bench_report["batches"].items():
        assert summary["decode_steps"] >= 1, batch
        per_frame = summary["per_frame_ms"]
        assert all(_positive(per_frame[s]) or (s == "host" and per_frame[s] >= 0) for s in STAGES), per_frame
        # the total is the whole step: exactly its parts, host being the time between the calls
        parts = sum(per_frame[s] for s in ("talker", "code_predictor", "codec", "host"))
        assert parts == pytest.approx(per_frame["total"], rel=1e-9)
        assert 0 <= summary["host_share"] < 1


@pytest.mark.slow
def test_each_stage_has_one_figure_in_both_tables(bench_report):
    for summary in bench_report["batches"].values():
        for stage, limits in summary["limits"].items():
            assert limits["measured_ms_per_frame"] == pytest.approx(summary["per_frame_ms"][stage], rel=1e-9)
    assert "= total" in bench_report["_stdout"]


def test_child_commands_of_bench_write_to_stderr_not_into_the_report(tmp_path, capfd):
    from qwen3tts.bench.suite import _cli

    _cli("tiny", str(tmp_path / "checkpoint"))
    out, err = capfd.readouterr()
    assert out == "" and "wrote custom_voice tiny checkpoint" in err


@pytest.mark.slow
def test_throughput_numbers_agree_with_each_other(bench_report):
    for batch, summary in bench_report["batches"].items():
        frame_s = summary["step_ms"] / 1e3
        assert summary["rtf_per_stream"] == pytest.approx(frame_s / 0.08)
        assert summary["frames_per_s"] == pytest.approx(int(batch) / frame_s)
        assert summary["x_real_time"] == pytest.approx(summary["frames_per_s"] * 0.08)


@pytest.mark.slow
def test_each_stage_has_a_physical_limit_share(bench_report):
    machine = bench_report["machine"]
    assert _positive(machine["peak_flops"]["f32"]) and machine["read_unavailable"] is None
    costs = bench_report["bundle"]["graph_costs"]
    # each stage's read limit is measured over a buffer of its own weight footprint (at least)
    assert set(machine["read"]) == {"talker", "code_predictor", "codec"}
    assert machine["read"]["talker"]["buffer_bytes"] >= costs["talker"]["weight_bytes_footprint"] > 0
    assert (
        machine["read"]["code_predictor"]["buffer_bytes"] >= costs["code_predictor"]["weight_bytes_footprint"]
    )
    assert all(
        _positive(r["bytes_per_s"]) and r["threads"] == machine["threads"] for r in machine["read"].values()
    )
    for summary in bench_report["batches"].values():
        for stage in ("talker", "code_predictor", "codec"):
            limit = summary["limits"][stage]
            assert limit["bound"] in ("memory", "compute")
            assert _positive(limit["bytes_per_frame"]) and _positive(limit["flops_per_frame"])
            assert _positive(limit["share_of_limit"]) and _positive(limit["weight_gb_per_s"])
            assert limit["share_of_read_limit"] == pytest.approx(
                limit["bytes_per_frame"]
                / (machine["read"][stage]["bytes_per_s"] / 1e3)
                / limit["measured_ms_per_frame"]
            )
            if limit["bound"] == "memory":
                read = machine["read"][stage]
                assert limit["read_limit_gb_per_s"] == pytest.approx(read["bytes_per_s"] / 1e9)
                assert f"{read['kernel']} read" in limit["denominator"]
            else:
                assert "matmul peak" in limit["denominator"]
    assert (
        "| of |" in bench_report["_stdout"] and "read limit (native streaming read" in bench_report["_stdout"]
    )


@pytest.mark.slow
def test_latency_memory_and_kv_are_reported(bench_report):
    for concurrency in ("1", "2"):
        ttfa = bench_report["ttfa"][concurrency]
        assert len(ttfa["samples"]) == int(concurrency)
        assert 0 < ttfa["p50_s"] <= ttfa["p95_s"] <= max(ttfa["samples"])
        stages = ttfa["stages_p50_s"]  # each stage ran before the first chunk, within the wait
        assert set(stages) == {"talker", "code_predictor", "codec"} and min(stages.values()) > 0
        assert sum(stages.values()) <= ttfa["p95_s"]
    assert bench_report["peak_rss_bytes"] > 50 * 2**20  # OpenVINO alone maps more than this
    assert bench_report["kv_bytes_per_audio_second"] == pytest.approx(
        bench_report["kv_bytes_per_token"] * 12.5
    )
    assert bench_report["workload"]["frames"] == FRAMES
    assert bench_report["workload"]["prompt_tokens"] >= 20
    assert bench_report["workload"]["text_track"] == "auto"  # the settings' layout, on record


@pytest.mark.slow
def test_memory_is_accounted_per_component_and_adds_up_to_the_resident_set(bench_report):
    memory = bench_report["memory"]
    parts = memory["components"]
    graphs = ("talker", "codec", "code_predictor")
    expected = {"python_numpy_and_cli", "openvino_and_bench", *graphs, "tokenizer_tables_kv_pool", "runs"}
    assert expected <= set(parts), parts
    assert sum(parts.values()) == memory["after_runs"]["VmRSS"]  # consecutive growths: nothing left out
    assert sum(parts.values()) <= bench_report["peak_rss_bytes"]
    assert parts["python_numpy_and_cli"] > 0 and parts["openvino_and_bench"] > 0  # OpenVINO maps megabytes
    assert sum(parts[g] for g in graphs) > 0  # compiled graphs keep something resident
    assert memory["known_bytes"]["kv_pool"] > 0 and memory["stored_bytes"]["talker"] > 0
    assert all(isinstance(memory["released_weight_file_bytes"][g], int) for g in graphs)
    assert "by component" in bench_report["_stdout"]


@pytest.mark.slow
def test_stdout_table_and_png_are_written(bench_report):
    assert "| batch | talker ms/frame" in bench_report["_stdout"]
    lines = bench_report["_stdout"].splitlines()
    header = next(i for i, line in enumerate(lines) if "time to first audio p50" in line)
    first = lines[header + 2].strip("|").split("|")  # one request: its wait, then the stages before it
    assert first[0].strip() == "1" and len(first) == 6
    assert all(cell.strip().endswith(" ms") for cell in first[1:])
    assert bench_report["_png"] == b"\x89PNG\r\n\x1a\n"


def _layer_weight_bytes(spec, bytes_per_value: int = 4) -> int:
    """q, k, v, o, gate, up and down projections of all layers of a decoder spec."""
    q_width, kv_width = spec.num_attention_heads * spec.head_dim, spec.num_key_value_heads * spec.head_dim
    per_layer = 2 * spec.hidden_size * q_width + 2 * spec.hidden_size * kv_width
    per_layer += 3 * spec.hidden_size * spec.intermediate_size
    return per_layer * spec.num_hidden_layers * bytes_per_value


def test_unrolled_code_predictor_counts_its_layer_weights_once_per_codebook_step(tiny_models):
    bundle = tiny_models.bundle(weights="f32")
    spec = read_manifest(bundle).spec
    predictor = read_graph_cost(bundle / "code_predictor.xml")
    talker = read_graph_cost(bundle / "talker.xml")
    steps = spec.code_predictor.num_code_groups - 1
    layers = _layer_weight_bytes(spec.code_predictor)
    # 15 unrolled steps read the 5 layers 15 times; the lm heads once each; gathered tables not at all
    assert (
        steps * layers <= predictor.weight_bytes_read < (steps + 1) * layers + predictor.weight_bytes_stored
    )
    assert _layer_weight_bytes(spec.talker) <= talker.weight_bytes_read <= talker.weight_bytes_stored


def test_codec_chunk_flops_scale_with_the_chunk_length(tiny_models):
    bundle = tiny_models.bundle(weights="f32")
    costs = codec_chunk_costs(bundle, read_manifest(bundle))  # frame part at the size + sample part
    small, large = costs[1], costs[12]
    assert large.flops == pytest.approx(12 * small.flops, rel=0.05)
    assert large.weight_bytes_read == small.weight_bytes_read
    samples = read_graph_cost(bundle / layout.codec_samples_xml(12))
    assert 0 < samples.weight_bytes_stored < large.weight_bytes_stored


def test_the_report_names_the_codec_graphs_it_loaded(bench_report):
    assert bench_report["bundle"]["codec_variant"] == "f32"  # the bench's own tiny bundle has no variant


@pytest.mark.slow
def test_the_report_says_how_the_code_predictor_ran_and_what_it_holds(bench_report):
    paths, memory = bench_report["bundle"]["decode_paths"], bench_report["memory"]
    assert "decode talker " in bench_report["_stdout"]
    compiled = bench_report["bundle"]["inference_precision"]
    if bench_report["_native_kernels"] == "never":
        assert paths == {"talker": "plugin", "code_predictor": "plugin"} and memory["fused"] == {}
        assert "code_predictor" in compiled
        return
    fused = memory["fused"]["code_predictor"]
    assert paths["code_predictor"] == f"fused native {fused['kernel_set']}"
    if bench_report["_native_kernels"] == "native talker":
        assert paths["talker"] == f"fused native {fused['kernel_set']}" and "talker" not in compiled
        assert bench_report["bundle"]["kv_cache_precision"] == "f16"
    assert fused["mapped_weight_bytes"] > 0
    assert "code_predictor" not in compiled  # no compiled graph, yet every figure above was reported
    assert memory["resident_by_component"]["code_predictor"]["file_bytes"] > 0  # its mapped weights
    assert f"code_predictor {paths['code_predictor']}" in bench_report["_stdout"]  # the header line
