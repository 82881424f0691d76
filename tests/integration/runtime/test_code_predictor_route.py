"""Under `devices.native_kernels: auto` the code predictor can run both ways: the fused native frame for
the batches it measured faster at (runtime/native_plan.py's FUSED_FASTER_UP_TO), the plugin's graph,
compiled beside it, for larger ones; the runner routes each call by its rows and says so."""

from __future__ import annotations

from test_native_frame import _inputs, _runtime

from qwen3tts.runtime import native_plan


def test_auto_takes_the_frame_up_to_its_measured_batch_and_the_graph_above(library, tiny_models, monkeypatch):
    monkeypatch.setattr(native_plan, "FUSED_FASTER_UP_TO", {(native_plan.cpu_vendor(), library.isa): 2})
    runtime = _runtime(tiny_models.bundle(weights="int8"))
    path = f"fused native {library.isa} up to batch 2, plugin above"
    assert runtime.runner.code_predictor_path == path == runtime.plan.decode_paths()["code_predictor"]
    assert "up to batch 2, plugin above" in runtime.plan.describe()
    fused, rows_seen = runtime.runner.fused_code_predictor, []
    frame = fused.frame
    monkeypatch.setattr(
        fused, "frame", lambda hidden, *rest: rows_seen.append(len(hidden)) or frame(hidden, *rest)
    )
    steps = runtime.spec.code_predictor.num_code_groups - 1
    for rows in (1, 2, 3, 5):
        codes, embed = runtime.runner.code_predictor(*_inputs(runtime.spec, rows=rows, seed=rows).values())
        assert codes.shape == (rows, steps) and embed.shape == (rows, runtime.spec.talker.hidden_size)
    assert rows_seen == [1, 2]  # 3 and 5 rows went to the plugin's graph
    runtime.runner.code_predictor(*_inputs(runtime.spec, rows=1, seed=23).values())
    assert rows_seen == [1, 2, 1]  # (the two paths' agreement: the parity tests above, with margins)


def test_no_graph_beside_the_frame_when_the_engine_never_runs_a_larger_batch(
    library, tiny_models, monkeypatch
):
    monkeypatch.setattr(native_plan, "FUSED_FASTER_UP_TO", {(native_plan.cpu_vendor(), library.isa): 2})
    runtime = _runtime(tiny_models.bundle(weights="int8"), "engine.max_num_seqs=2")
    assert runtime.runner.code_predictor_path == f"fused native {library.isa}"  # no "plugin above"
    assert "code_predictor" not in runtime.plan.fused_up_to
    # no graph compiled or warmed up beside the frame: no weight pages of its own to give back
    assert runtime.released_weight_bytes["code_predictor"] == 0
    codes, _ = runtime.runner.code_predictor(*_inputs(runtime.spec, rows=2, seed=5).values())
    assert codes.shape == (2, runtime.spec.code_predictor.num_code_groups - 1)
