"""Engine over the FakeRunner: streaming, batching, preemption, cancel and per-request isolation.

The fake's outputs are a hash of each sequence's own KV prefix read through its block table, so "same
codes as alone" proves that batching, chunked prefill and recompute after preemption feed the talker
exactly what a lone run does, and that no block is shared or stale.
"""

import threading

import numpy as np
import pytest
from engine_fakes import SAMPLES_PER_FRAME, FakeRunner, fake_prompt_builder

from qwen3tts.engine.config import EngineConfig
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.errors import ConfigError, RequestError

TEXTS = {
    "a": "the next train leaves",
    "b": "please mind the gap",
    "c": "doors closing",
    "d": "one two three four five",
}


def make_engine(runner: FakeRunner | None = None, **config) -> Engine:
    runner = runner or FakeRunner()
    return Engine(runner, fake_prompt_builder(runner.hidden_size), EngineConfig(**config))


def req(name: str, seed: int = 1, **kwargs) -> Request:
    return Request(name, TEXTS.get(name, name), seed=seed, **kwargs)


def run_until_done(engine: Engine, handles, max_steps: int = 2000) -> None:
    for _ in range(max_steps):
        if all(h.wait(0) for h in handles):
            return
        engine.step()
    raise AssertionError("requests did not finish")


def alone(request: Request):
    engine = make_engine()
    handle = engine.submit(request)
    run_until_done(engine, [handle])
    return handle.frames, handle.result(0)


def assert_all_blocks_free(engine: Engine) -> None:
    assert engine.block_manager.num_used_blocks == 0
    assert engine.stats().num_kv_blocks_free == engine.runner.num_kv_blocks


def test_a_request_streams_pcm_in_chunks_of_4_then_12_frames_and_returns_every_block():
    engine = make_engine(first_chunk_frames=4, chunk_frames=12)
    handle = engine.submit(req("a"))
    run_until_done(engine, [handle])
    frames = handle.frames
    assert handle.status is SequenceStatus.FINISHED_STOPPED and len(frames) > 20
    chunk_frames = [n for _, n in engine.runner.codec_calls]
    assert chunk_frames[:3] == [4, 12, 12] and sum(chunk_frames) == len(frames) and chunk_frames[-1] <= 12
    chunks = list(handle)
    assert [len(c) for c in chunks] == [n * SAMPLES_PER_FRAME for n in chunk_frames]
    assert all(c.dtype == np.float32 for c in chunks)
    assert (frames[:, 0] < engine.runner.codebook_size).all() and frames.shape[1] == 16
    assert engine.runner.closed_streams == [handle.seq_id] and engine.runner.open_streams == {}
    assert_all_blocks_free(engine)


def test_a_request_may_ask_for_a_longer_first_chunk_than_the_engines_default():
    engine = make_engine(first_chunk_frames=1, chunk_frames=12)
    own, default = engine.submit(req("a", first_chunk_frames=2)), engine.submit(req("b"))
    run_until_done(engine, [own, default])
    calls = {
        seq_id: [n for s, n in engine.runner.codec_calls if s == seq_id]
        for seq_id in (own.seq_id, default.seq_id)
    }
    assert calls[own.seq_id][:2] == [2, 12] and calls[default.seq_id][:2] == [1, 12]
    assert len(next(iter(own))) == 2 * SAMPLES_PER_FRAME


def test_each_step_is_one_talker_call_and_one_code_predictor_call_over_the_whole_batch():
    engine = make_engine()
    handles = [engine.submit(req(name)) for name in "abc"]
    engine.step()
    engine.step()
    ids = [h.seq_id for h in handles]
    prompt_lens = [len(TEXTS[name].split()) + 4 for name in "abc"]
    assert engine.runner.talker_calls == [
        [(i, 0, p) for i, p in zip(ids, prompt_lens, strict=True)],  # three prompts in one call
        [(i, p, 1) for i, p in zip(ids, prompt_lens, strict=True)],  # three decodes in one call
    ]
    assert engine.runner.code_predictor_calls == [3, 3]


def test_batched_requests_produce_the_same_codes_and_audio_as_alone():
    engine = make_engine()
    handles = {name: engine.submit(req(name, seed=i)) for i, name in enumerate("abcd")}
    run_until_done(engine, handles.values())
    for i, (name, handle) in enumerate(handles.items()):
        frames, pcm = alone(req(name, seed=i))
        np.testing.assert_array_equal(handle.frames, frames)
        np.testing.assert_array_equal(handle.result(0), pcm)
    assert_all_blocks_free(engine)


def test_a_pool_too_small_for_all_requests_preempts_yet_completes_each_with_identical_codes_and_audio():
    runner = FakeRunner(num_kv_blocks=16)  # 64 positions; four requests need ~45 each
    engine = make_engine(runner)
    handles = {name: engine.submit(req(name, seed=i)) for i, name in enumerate("abcd")}
    run_until_done(engine, handles.values())
    assert engine.stats().num_preemptions > 0
    for i, (name, handle) in enumerate(handles.items()):
        frames, pcm = alone(req(name, seed=i))
        assert handle.status is SequenceStatus.FINISHED_STOPPED
        np.testing.assert_array_equal(handle.frames, frames)
        np.testing.assert_array_equal(handle.result(0), pcm)  # no frame decoded twice or skipped
    assert_all_blocks_free(engine)


def test_a_long_prompt_is_prefilled_in_chunks_while_a_running_stream_decodes_every_step():
    engine = make_engine(max_num_seqs=2, max_num_batched_tokens=4)
    a = engine.submit(req("a"))
    engine.step()  # a: 4 of its 8 prompt positions
    engine.step()  # a: the rest, first frame
    long_text = " ".join(["word"] * 12)  # 16 prompt positions
    b = engine.submit(Request("b", long_text, seed=3))
    for _ in range(6):
        engine.step()
    calls = engine.runner.talker_calls[2:]
    # Every step: a's decode first, then b's prompt in chunks of the 3 positions left in the budget.
    assert [call[0][0] for call in calls] == [a.seq_id] * 6
    assert [call[1][1:] for call in calls] == [(0, 3), (3, 3), (6, 3), (9, 3), (12, 3), (15, 1)]
    run_until_done(engine, [a, b])
    np.testing.assert_array_equal(b.frames, alone(Request("b", long_text, seed=3))[0])


def test_cancel_takes_effect_at_the_next_step_and_leaves_the_others_unchanged():
    engine = make_engine()
    a, b = engine.submit(req("a")), engine.submit(req("b"))
    while len(a.frames) < 6:
        engine.step()
    frames_at_cancel = len(a.frames)
    assert a.cancel()
    engine.step()
    assert a.status is SequenceStatus.FINISHED_CANCELLED and len(a.frames) == frames_at_cancel
    assert a.seq_id in engine.runner.closed_streams
    assert list(a) == [] and a.result(0).size == 0  # the stream ends right away, without an error
    assert not a.cancel()  # already finished
    run_until_done(engine, [b])
    np.testing.assert_array_equal(b.frames, alone(req("b"))[0])
    assert_all_blocks_free(engine)


def test_cancelling_a_waiting_request_frees_nothing_it_never_had_and_ends_it():
    engine = make_engine(max_num_seqs=1, max_num_batched_tokens=64)
    a, b = engine.submit(req("a")), engine.submit(req("b"))
    engine.step()
    assert engine.cancel("b") and engine.stats().num_waiting == 1
    engine.step()
    assert b.status is SequenceStatus.FINISHED_CANCELLED and engine.stats().num_waiting == 0
    run_until_done(engine, [a])
    assert_all_blocks_free(engine)


@pytest.mark.parametrize("fault", ["fail_talker", "nan_logits", "fail_codec"])
def test_a_fault_in_one_request_ends_it_with_a_request_error_and_leaves_the_others_unchanged(fault):
    engine = make_engine()
    handles = {name: engine.submit(req(name)) for name in "abc"}
    for _ in range(8):
        engine.step()
    getattr(engine.runner, fault).add(handles["b"].seq_id)
    run_until_done(engine, handles.values())
    assert handles["b"].status is SequenceStatus.FINISHED_ERROR
    with pytest.raises(RequestError):
        handles["b"].result(0)
    for name in "ac":
        np.testing.assert_array_equal(handles[name].frames, alone(req(name))[0])
        assert handles[name].status is SequenceStatus.FINISHED_STOPPED
    assert_all_blocks_free(engine)
    assert engine.runner.open_streams == {}


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (Request("x", "   "), "text"),
        (Request("", "hello"), "id"),
        (Request("x", "hello", rank="high"), "rank"),
        (Request("x", "hello", rank=True), "rank"),
        (Request("x", "hello", urgent=1), "urgent"),
        (Request("x", "hello", sampling={"temprature": 0.5}), "unknown sampling"),
        (Request("x", "hello", sampling={"top_p": 0.0}), "top_p"),
        (Request("x", "hello", max_frames=1), "max_frames"),
        (Request("x", "hello", seed=-1), "seed"),
        (Request("x", "hello", speaker="nobody"), "unknown speaker"),
        (Request("x", " ".join(["w"] * 300)), "KV cache"),
    ],
)
def test_bad_input_is_rejected_at_submit_with_a_clear_message(request_, message):
    engine = make_engine()
    with pytest.raises(RequestError, match=message):
        engine.submit(request_)
    assert engine.stats().num_waiting == 0


def test_a_prompt_of_the_wrong_width_is_rejected_at_submit():
    engine = Engine(FakeRunner(hidden_size=8), fake_prompt_builder(hidden_size=6))
    with pytest.raises(RequestError, match="not \\(P, 8\\)"):
        engine.submit(req("a"))


def test_an_id_already_in_progress_is_rejected_but_can_be_reused_after_it_finished():
    engine = make_engine()
    a = engine.submit(req("a"))
    with pytest.raises(RequestError, match="already in progress"):
        engine.submit(req("a"))
    run_until_done(engine, [a])
    engine.submit(req("a"))


def test_max_frames_n_gives_n_minus_1_frames_like_hf_max_new_tokens():
    engine = make_engine(first_chunk_frames=4, chunk_frames=12)
    handle = engine.submit(req("a", max_frames=6))
    run_until_done(engine, [handle])
    assert handle.status is SequenceStatus.FINISHED_LENGTH and len(handle.frames) == 5
    np.testing.assert_array_equal(handle.frames, alone(req("a"))[0][:5])
    assert [n for _, n in engine.runner.codec_calls] == [4, 1]  # the remainder is flushed at the end


def test_the_same_seed_gives_the_same_audio_another_seed_other_audio_and_greedy_ignores_the_seed():
    assert np.array_equal(alone(req("a", seed=5))[1], alone(req("a", seed=5))[1])
    assert not np.array_equal(alone(req("a", seed=5))[0], alone(req("a", seed=6))[0])
    np.testing.assert_array_equal(
        alone(req("a", seed=5, greedy=True))[0], alone(req("a", seed=6, greedy=True))[0]
    )


def test_sampling_overrides_reach_the_sampler():
    default, hot = alone(req("a"))[0], alone(req("a", sampling={"temperature": 1.5, "top_k": 5}))[0]
    assert not np.array_equal(default, hot)


def test_set_max_batch_shrinks_the_live_batch_and_the_audio_stays_identical():
    engine = make_engine()
    handles = {name: engine.submit(req(name)) for name in "abc"}
    for _ in range(5):
        engine.step()
    engine.set_max_batch(1)
    engine.step()
    assert len(engine.runner.talker_calls[-1]) == 1 and engine.stats().num_running == 1
    engine.set_max_batch(3)
    run_until_done(engine, handles.values())
    for name, handle in handles.items():
        np.testing.assert_array_equal(handle.frames, alone(req(name))[0])


def test_an_emergency_starts_beyond_the_throttle():
    engine = make_engine()
    engine.set_max_batch(1)
    a = engine.submit(req("a"))
    engine.step()
    e = engine.submit(req("b", rank=2, urgent=True))
    engine.step()
    assert [member[0] for member in engine.runner.talker_calls[-1]] == [a.seq_id, e.seq_id]


def test_stats_report_running_waiting_blocks_and_throughput():
    engine = make_engine(max_num_seqs=2, max_num_batched_tokens=64)
    for name in "abc":
        engine.submit(req(name))
    assert engine.stats().num_waiting == 3
    for _ in range(3):
        engine.step()
    stats = engine.stats()
    assert (stats.num_running, stats.num_waiting, stats.max_batch) == (2, 1, 2)
    assert stats.num_kv_blocks_used == engine.block_manager.num_used_blocks > 0
    assert stats.num_kv_blocks_used + stats.num_kv_blocks_free == engine.runner.num_kv_blocks
    assert stats.frames_per_second > 0


def test_the_step_loop_thread_streams_concurrent_requests_and_stop_cancels_the_rest():
    engine = make_engine(FakeRunner(num_kv_blocks=24))
    engine.start()
    handles = {name: engine.submit(req(name)) for name in "abcd"}
    results = {}

    def consume(name):
        results[name] = np.concatenate(list(handles[name]))

    threads = [threading.Thread(target=consume, args=(name,)) for name in handles]
    for t in threads:
        t.start()
    engine.set_max_batch(2)  # live, from another thread
    for t in threads:
        t.join(20)
    for name in handles:
        np.testing.assert_array_equal(results[name], alone(req(name))[1])
    late = engine.submit(Request("late", " ".join(["w"] * 10), max_frames=10_000))
    engine.stop()
    assert late.wait(5) and late.status.is_finished
    with pytest.raises(RequestError, match="stopped"):
        engine.submit(req("e"))


def test_config_rejects_a_token_budget_below_the_batch_size():
    with pytest.raises(ConfigError, match="max_num_batched_tokens"):
        EngineConfig(max_num_seqs=8, max_num_batched_tokens=4)


def test_the_engine_layer_imports_only_the_standard_library_numpy_and_itself():
    import ast
    import sys
    from pathlib import Path

    import qwen3tts.engine as package

    allowed = set(sys.stdlib_module_names) | {"numpy", "qwen3tts"}
    files = sorted(Path(package.__file__).parent.glob("*.py"))
    assert len(files) >= 7
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"
                if name.startswith("qwen3tts."):  # appliance -> engine <- runtime: nothing else
                    assert name.startswith(("qwen3tts.engine", "qwen3tts.errors")), name


def test_mean_batch_is_the_mean_number_of_frames_per_decode_step():
    engine = make_engine(max_num_seqs=2)
    assert engine.stats().mean_batch == 0.0
    handles = [engine.submit(req(name)) for name in "ab"]
    run_until_done(engine, handles)
    batched = engine.stats().mean_batch
    frames = sum(len(h.frames) for h in handles)
    steps_with_frames = len(engine.runner.code_predictor_calls)
    assert batched == pytest.approx(frames / steps_with_frames) and 1.0 < batched <= 2.0
    handle = engine.submit(req("c"))
    run_until_done(engine, [handle])  # alone: its steps bring the mean down towards 1
    assert 1.0 <= engine.stats().mean_batch < batched


def test_ready_chunks_returns_what_is_there_without_waiting_then_the_end():
    engine = make_engine()
    handle = engine.submit(req("a"))
    assert handle.ready_chunks() == ([], False)  # nothing produced yet, and no wait
    collected = []
    while True:
        engine.step()
        chunks, ended = handle.ready_chunks()
        collected += chunks
        if ended:
            break
    np.testing.assert_array_equal(np.concatenate(collected), alone(req("a"))[1])


def test_ready_chunks_raises_the_request_error_of_a_failed_request():
    engine = make_engine()
    handle = engine.submit(req("a"))
    engine.step()
    engine.runner.fail_codec.add(handle.seq_id)
    run_until_done(engine, [handle])
    with pytest.raises(RequestError):
        while not handle.ready_chunks()[1]:
            pass
