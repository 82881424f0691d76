"""The frame-variants benchmark (bench/native_variants.py) runs on a tiny predictor and reports every
variant: two builds of the library (here the same one twice) in small and 2 MiB pages."""

import json

import pytest

from qwen3tts.bench import native_variants
from qwen3tts.runtime.native import DEFAULT_LIBRARY


def test_the_variants_benchmark_runs_and_reports_every_variant(library, tmp_path):
    out = tmp_path / "variants.json"
    args = ["--shape", "tiny", "--batch-sizes", "1,2", "--rounds", "2", "--instances", "2"]
    args += ["--library", str(DEFAULT_LIBRARY), "--pages", "small,huge", "--work-dir", str(tmp_path)]
    assert native_variants.main([*args, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["weight_bytes_per_frame"] > 0 and report["instances"] == 2
    for batch in ("1", "2"):
        measured = report["batches"][batch]
        assert measured["read_limit"]["gb_per_s"] > 0 and "read of a" in measured["read_limit"]["of"]
        variants = measured["variants"]
        assert [name.split("), ")[1] for name in variants] == ["small pages", "huge pages"] * 2
        assert [name.split(" (")[0] for name in variants] == ["library 0"] * 2 + ["library 1"] * 2
        first = next(iter(variants.values()))
        assert first["ratio_to_first"] == 1.0
        for v in variants.values():
            assert len(v["instances_median_ms"]) == 2 and all(ms > 0 for ms in v["instances_median_ms"])
            assert v["gb_per_s"] > 0 and len(v["mib_in_2mib_pages"]) == 2
            assert v["share_of_read_limit"] == pytest.approx(
                v["gb_per_s"] / measured["read_limit"]["gb_per_s"]
            )


def test_pages_other_than_small_or_huge_are_refused(capsys):
    with pytest.raises(SystemExit) as refused:
        native_variants.main(["--pages", "small,giant"])
    assert refused.value.code == 2
    assert "--pages: small and/or huge, not small,giant" in capsys.readouterr().err


def test_the_variants_benchmark_takes_int4_weights(library, tmp_path):
    # INT4 matrices are half the INT8 bytes: the frame's weight bytes say which were read
    args = ["--shape", "tiny", "--batch-sizes", "1", "--rounds", "2", "--instances", "1", "--pages", "small"]
    args += ["--work-dir", str(tmp_path)]
    reports = {}
    for weights in ("int4_sym_g128", "int8"):
        out = tmp_path / f"{weights}.json"
        assert native_variants.main([*args, "--weights", weights, "--json", str(out)]) == 0
        reports[weights] = json.loads(out.read_text())
        assert reports[weights]["weights"] == weights
    assert reports["int8"]["weight_bytes_per_frame"] > reports["int4_sym_g128"]["weight_bytes_per_frame"]
