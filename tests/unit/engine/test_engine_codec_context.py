"""A prompt's codec context (an ICL voice's reference codes) over the FakeRunner.

The official wrapper decodes reference + generated codes in one go and cuts the reference's audio off.
The fake codec's PCM for a frame depends on the frame before it and on its index in the stream, so a
stream that starts without the context, re-emits the context's samples or decodes a frame twice after
a preemption gives other samples than "decode context + frames at once, drop the context's part".
"""

import numpy as np
import pytest
from engine_fakes import SAMPLES_PER_FRAME, FakeRunner, fake_prompt_builder

from qwen3tts.engine.config import EngineConfig
from qwen3tts.engine.engine import Engine
from qwen3tts.engine.sequence import Request, SequenceStatus
from qwen3tts.errors import RequestError

RNG = np.random.default_rng(11)
CONTEXTS = {
    "anna": RNG.integers(0, 32, (9, 16), dtype=np.int64),  # not a multiple of any chunk size
    "ben": RNG.integers(0, 32, (4, 16), dtype=np.int64),
}
TEXTS = ["the next train leaves", "please mind the gap", "doors closing", "one two three four five"]


def make_engine(runner: FakeRunner | None = None, contexts=CONTEXTS) -> Engine:
    runner = runner or FakeRunner()
    return Engine(runner, fake_prompt_builder(runner.hidden_size, contexts), EngineConfig())


def run_until_done(engine: Engine, handles, max_steps: int = 2000) -> None:
    for _ in range(max_steps):
        if all(h.wait(0) for h in handles):
            return
        engine.step()
    raise AssertionError("requests did not finish")


def decoded_with_context_then_cut(context: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """What the official wrapper does: one decode over context + frames, the context's samples cut."""
    codec = FakeRunner()
    codec.codec_open(0)
    pcm = codec.codec_decode(0, np.concatenate([context, frames]), final=True)
    return pcm[len(context) * SAMPLES_PER_FRAME :]


def alone(request: Request, contexts=CONTEXTS):
    engine = make_engine(contexts=contexts)
    handle = engine.submit(request)
    run_until_done(engine, [handle])
    return handle.frames, handle.result(0)


def test_the_context_is_decoded_first_and_none_of_its_samples_is_emitted():
    engine = make_engine()
    handle = engine.submit(Request("a", TEXTS[0], seed=1, ref_audio="anna"))
    chunks = []
    for _ in range(2000):
        if handle.wait(0):
            break
        engine.step()
        chunks.extend(handle.ready_chunks()[0])
    chunks.extend(handle.ready_chunks()[0])
    assert handle.status is SequenceStatus.FINISHED_STOPPED
    frames = handle.frames
    pcm = np.concatenate(chunks)
    assert pcm.shape == (len(frames) * SAMPLES_PER_FRAME,)  # no sample of the 9 context frames
    np.testing.assert_array_equal(pcm, decoded_with_context_then_cut(CONTEXTS["anna"], frames))
    np.testing.assert_array_equal(engine.runner.codec_contexts[handle.seq_id], CONTEXTS["anna"])
    assert engine.runner.open_streams == {}


def test_a_request_without_a_context_opens_a_fresh_stream_and_sounds_different_from_one_with():
    engine = make_engine()
    plain = engine.submit(Request("plain", TEXTS[0], seed=1))
    run_until_done(engine, [plain])
    assert engine.runner.codec_contexts[plain.seq_id] is None
    frames, with_context = alone(Request("icl", TEXTS[0], seed=1, ref_audio="anna"))
    np.testing.assert_array_equal(plain.frames, frames)  # the context changes the audio, not the codes
    assert not np.array_equal(plain.result(0), with_context)


def test_preemption_and_recompute_keep_the_context_cut_and_emit_every_frame_once():
    runner = FakeRunner(num_kv_blocks=16)  # 64 positions; four requests need ~45 each
    engine = make_engine(runner)
    voices = ["anna", "ben", "anna", None]
    requests = [
        Request(f"r{i}", text, seed=i, ref_audio=voice)
        for i, (text, voice) in enumerate(zip(TEXTS, voices, strict=True))
    ]
    handles = [engine.submit(request) for request in requests]
    run_until_done(engine, handles)
    assert engine.stats().num_preemptions > 0
    for request, handle in zip(requests, handles, strict=True):
        frames, pcm = alone(request)
        assert handle.status is SequenceStatus.FINISHED_STOPPED
        np.testing.assert_array_equal(handle.frames, frames)
        np.testing.assert_array_equal(handle.result(0), pcm)
        if request.ref_audio:
            np.testing.assert_array_equal(
                pcm, decoded_with_context_then_cut(CONTEXTS[request.ref_audio], frames)
            )
    assert engine.block_manager.num_used_blocks == 0


@pytest.mark.parametrize(
    "context",
    [np.zeros((3, 15), np.int64), np.zeros((3, 16), np.float32), np.full((3, 16), -1, np.int64), [[0] * 16]],
    ids=["15-codes", "float", "negative", "list"],
)
def test_a_malformed_codec_context_is_rejected_at_submit(context):
    engine = make_engine(contexts={"bad": context})
    with pytest.raises(RequestError, match="codec context"):
        engine.submit(Request("x", TEXTS[0], ref_audio="bad"))
    assert engine.stats().num_waiting == 0
