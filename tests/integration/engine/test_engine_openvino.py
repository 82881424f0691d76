"""The engine on a real tiny bundle: batching, preemption, cancel and failures never change anyone's audio.

Greedy decoding with f32 inference and an f32 KV cache is deterministic, so "the same codes as alone"
is an exact comparison: any batching or paging bug shows up as different codes.
"""

import numpy as np
import openvino as ov
import pytest
from bundles import PARITY_OVERRIDES
from runtime_shelf import RuntimeShelf

from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.errors import RequestError
from qwen3tts.model.checkpoint import load_checkpoint
from qwen3tts.model.graphs.codec import AUDIO, CODES, build_codec_full
from qwen3tts.runtime.loader import load_runtime
from qwen3tts.runtime.ov_runner import CONTEXT_STARTS
from qwen3tts.settings_loader import load_settings

TEXTS = [
    "Hello.",
    "The train to Berlin leaves from platform four.",
    "欢迎光临，请注意安全。",
    "Attention please: the store closes in 15 minutes, thank you for shopping with us today!",
]
FRAMES = [9, 17, 13, 21]  # max_frames per request: they finish at different steps


def loaded(bundle, *overrides):
    """A runtime of its own, for a test that changes the runner."""
    return load_runtime(bundle, load_settings(None, [*PARITY_OVERRIDES, *overrides]))


@pytest.fixture(scope="module")
def shelf() -> RuntimeShelf:
    return RuntimeShelf()


@pytest.fixture
def runtime_for(shelf):
    """runtime_for(bundle, *overrides): a runtime of the module's shelf with an engine of the test's own,
    given back after the test."""
    lent = []

    def lend(bundle, *overrides):
        settings = load_settings(None, [*PARITY_OVERRIDES, *overrides])
        lent.append((bundle, settings, shelf.lend(bundle, settings)))
        return lent[-1][2]

    yield lend
    for bundle, settings, runtime in lent:
        shelf.give_back(bundle, settings, runtime)


def request(i, **kw):
    return Request(
        id=f"r{i}",
        text=TEXTS[i],
        language="english",
        speaker="vivian",
        greedy=True,
        max_frames=FRAMES[i],
        **kw,
    )


def drive(engine, handles, submit_at=None, max_steps=400):
    """Step the engine by hand; submit_at maps step number -> requests submitted before that step."""
    submit_at = submit_at or {}
    for step in range(max_steps):
        for req in submit_at.get(step, []):
            handles[req.id] = engine.submit(req)
        if not engine.step() and step > max(submit_at, default=0):
            break
    return handles


@pytest.fixture(scope="module")
def bundle(tiny_models):
    return tiny_models.bundle("custom_voice", "tiny", "f32")


@pytest.fixture(scope="module")
def alone_codes(bundle, shelf):
    """Each request's codes when it runs alone."""
    settings = load_settings(None, list(PARITY_OVERRIDES))
    runtime = shelf.lend(bundle, settings)
    engine = runtime.engine
    codes = {}
    for i in range(len(TEXTS)):  # one after the other: never two in the same step
        handles = drive(engine, {}, {0: [request(i)]})
        codes[f"r{i}"] = handles[f"r{i}"].frames
    shelf.give_back(bundle, settings, runtime)
    return codes


def test_each_request_alone_produces_max_frames_minus_one_frames(alone_codes):
    for i in range(len(TEXTS)):
        assert alone_codes[f"r{i}"].shape == (FRAMES[i] - 1, 16)


def test_requests_admitted_at_different_steps_produce_exactly_their_codes_alone(
    bundle, alone_codes, runtime_for
):
    engine = runtime_for(bundle).engine
    handles = drive(engine, {}, {0: [request(0)], 2: [request(1), request(2)], 5: [request(3)]})
    for rid, handle in handles.items():
        assert handle.status is SequenceStatus.FINISHED_LENGTH
        np.testing.assert_array_equal(handle.frames, alone_codes[rid], err_msg=rid)
    assert engine.stats().num_kv_blocks_used == 0


def test_a_pool_too_small_for_all_requests_preempts_and_still_completes_every_request_identically(
    bundle, alone_codes, runtime_for
):
    engine = runtime_for(bundle, "engine.num_kv_blocks=3").engine
    handles = drive(engine, {}, {0: [request(i) for i in range(4)]})
    assert engine.stats().num_preemptions > 0
    for rid, handle in handles.items():
        np.testing.assert_array_equal(handle.frames, alone_codes[rid], err_msg=rid)
    assert engine.stats().num_kv_blocks_used == 0


def test_cancel_takes_effect_within_one_frame_and_frees_its_blocks(bundle, runtime_for):
    engine = runtime_for(bundle).engine
    handle = engine.submit(Request(id="long", text=TEXTS[3], speaker="vivian", greedy=True, max_frames=200))
    for _ in range(6):
        engine.step()
    frames_at_cancel = handle.frames.shape[0]
    assert handle.cancel()
    for _ in range(3):
        engine.step()
    assert handle.status is SequenceStatus.FINISHED_CANCELLED
    assert handle.frames.shape[0] <= frames_at_cancel + 1
    assert engine.stats().num_kv_blocks_used == 0


def test_an_exception_in_one_sequence_leaves_the_others_outputs_unchanged(bundle, alone_codes):
    runtime = loaded(bundle)
    engine, runner = runtime.engine, runtime.runner
    real_talker = runner.talker
    victim = {}

    def failing_talker(chunks):
        if any(chunk.seq_id == victim.get("id") for chunk in chunks) and engine.stats().num_running:
            raise RuntimeError("injected talker fault")
        return real_talker(chunks)

    runner.talker = failing_talker
    handles = {f"r{i}": engine.submit(request(i)) for i in (0, 1, 3)}
    handles["bad"] = engine.submit(
        Request(id="bad", text=TEXTS[2], speaker="vivian", greedy=True, max_frames=30)
    )
    victim["id"] = handles["bad"].seq_id
    drive(engine, handles)
    assert handles["bad"].status is SequenceStatus.FINISHED_ERROR
    with pytest.raises(RequestError, match="injected talker fault"):
        handles["bad"].result(timeout=1)
    for rid in ("r0", "r1", "r3"):
        np.testing.assert_array_equal(handles[rid].frames, alone_codes[rid], err_msg=rid)
    assert engine.stats().num_kv_blocks_used == 0


def test_streamed_pcm_chunks_concatenate_to_the_full_decode_of_the_same_codes(
    bundle, tiny_models, runtime_for
):
    runtime = runtime_for(bundle)
    handle = drive(runtime.engine, {}, {0: [request(3)]})["r3"]
    streamed = handle.result(timeout=1)
    checkpoint = load_checkpoint(tiny_models.checkpoint("custom_voice", "tiny"))
    full_model = ov.Core().compile_model(
        build_codec_full(checkpoint.spec.codec, checkpoint.codec_weights),
        "CPU",
        {"INFERENCE_PRECISION_HINT": "f32"},
    )
    full = full_model({CODES: handle.frames[None].astype(np.int64)})[AUDIO][0]
    assert streamed.shape == full.shape == (handle.frames.shape[0] * 1920,)
    assert np.abs(streamed - full).max() < 1e-4


def test_bad_input_is_rejected_at_submit_with_a_clear_message(bundle, runtime_for):
    engine = runtime_for(bundle).engine
    with pytest.raises(RequestError, match="non-empty"):
        engine.submit(Request(id="e", text="  "))
    with pytest.raises(RequestError, match="unknown voice 'nobody'"):
        engine.submit(Request(id="v", text="hi", speaker="nobody"))
    with pytest.raises(RequestError, match="unknown language 'klingon'"):
        engine.submit(Request(id="l", text="hi", language="klingon"))
    with pytest.raises(RequestError, match="instruct is not supported"):
        engine.submit(Request(id="i", text="hi", speaker="vivian", instruct="whisper"))


def test_the_same_seed_gives_the_same_sampled_audio_and_another_seed_does_not(bundle, runtime_for):
    engine = runtime_for(bundle).engine

    def sampled(rid, seed):
        handles = drive(
            engine, {}, {0: [Request(id=rid, text=TEXTS[1], speaker="vivian", seed=seed, max_frames=9)]}
        )
        return handles[rid].result(timeout=1)

    first, again, other = sampled("s1", 7), sampled("s2", 7), sampled("s3", 8)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_the_runner_keeps_the_codec_start_of_the_most_recent_contexts_only(bundle, monkeypatch):
    runner = loaded(bundle).runner
    models = runner.codec_models
    runs = []
    run = models.run
    monkeypatch.setattr(models, "run", lambda codes, state: (runs.append(len(codes)), run(codes, state))[1])
    rng = np.random.default_rng(3)
    contexts = [rng.integers(0, 2048, (12, 16)) for _ in range(CONTEXT_STARTS + 1)]

    def open_and_count(seq_id, context):
        runs.clear()
        runner.codec_open(seq_id, context)
        runner.codec_close(seq_id)
        return sum(runs)

    assert [open_and_count(i, c) for i, c in enumerate(contexts)] == [12] * len(contexts)
    assert open_and_count(10, contexts[-1]) == 0  # kept: resumed without decoding
    assert open_and_count(11, contexts[0]) == 12  # the least recently used one was dropped
