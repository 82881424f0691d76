"""Submit-time checks (engine/admission.py) called directly: what a valid request yields, and what a
prompt builder may hand back before the engine refuses it. Engine.submit's own refusals of bad request
fields are in test_engine.py; these are the outputs and the prompt checks it does not reach."""

import numpy as np
import pytest

from qwen3tts.engine.admission import build_prompt, validate_request
from qwen3tts.engine.block_manager import BlockManager
from qwen3tts.engine.config import EngineConfig, SamplingParams
from qwen3tts.engine.sequence import Prompt, Request
from qwen3tts.errors import RequestError

H = 4


def prompt(positions=3, trailing=2, width=H, pad_width=H, fill=0.5) -> Prompt:
    return Prompt(
        embeddings=np.full((positions, width), fill, np.float32),
        trailing_text=np.zeros((trailing, width), np.float32),
        pad_vector=np.zeros(pad_width, np.float32),
    )


def test_a_request_without_overrides_gets_the_engine_defaults():
    config = EngineConfig(max_frames=300)
    params, max_frames = validate_request(Request("a", "hello"), config)
    assert params == config.sampling
    assert max_frames == 300


def test_a_requests_own_sampling_and_frame_cap_override_the_defaults():
    config = EngineConfig(max_frames=300)
    request = Request("a", "hello", sampling={"temperature": 0.3, "top_k": 7}, max_frames=12)
    params, max_frames = validate_request(request, config)
    assert (params.temperature, params.top_k, max_frames) == (0.3, 7, 12)
    assert params.top_p == SamplingParams().top_p  # fields not overridden keep the defaults


def test_greedy_turns_greedy_sampling_on_without_touching_the_other_fields():
    params, _ = validate_request(Request("a", "hello", greedy=True, sampling={"top_k": 3}), EngineConfig())
    assert params.greedy and params.talker_greedy and params.subtalker_greedy
    assert params.top_k == 3


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (Request(7, "hello"), "request id must be a non-empty string"),
        (Request("a", None), "'a': text must be a non-empty string"),
        (Request("a", "hello", seed=1.5), "'a': seed must be a non-negative integer"),
        (Request("a", "hello", max_frames=2.5), "'a': max_frames must be an integer >= 2"),
        (Request("a", "hello", urgent="yes"), "'a': urgent must be true or false, not 'yes'"),
        (Request("a", "hello", first_chunk_frames=0), "'a': first_chunk_frames must be an integer >= 1"),
        (Request("a", "hello", first_chunk_frames=True), "'a': first_chunk_frames must be an integer >= 1"),
        (Request("a", "hello", first_chunk_frames=1.5), "'a': first_chunk_frames must be an integer >= 1"),
    ],
)
def test_a_field_of_the_wrong_type_is_refused_naming_the_request(request_, message):
    with pytest.raises(RequestError, match=message):
        validate_request(request_, EngineConfig())


def test_seed_zero_and_max_frames_two_are_the_smallest_accepted():
    _, max_frames = validate_request(Request("a", "hello", seed=0, max_frames=2), EngineConfig())
    assert max_frames == 2


def test_a_well_formed_prompt_is_returned_as_built():
    built = prompt()
    assert build_prompt(Request("a", "hi"), lambda _r: built, H, BlockManager(4, 4)) is built


def test_a_builders_value_error_becomes_a_request_error_naming_the_request():
    def refuse(_request):
        raise ValueError("unknown speaker 'nobody'")

    with pytest.raises(RequestError, match="request 'a': unknown speaker 'nobody'"):
        build_prompt(Request("a", "hi"), refuse, H, BlockManager(4, 4))


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (prompt(positions=0), r"prompt embeddings \(0, 4\) are not \(P, 4\)"),
        (prompt(width=5), r"prompt embeddings \(3, 5\) are not \(P, 4\)"),
        (
            Prompt(np.zeros(4, np.float32), np.zeros((1, H), np.float32), np.zeros(H, np.float32)),
            "embeddings",
        ),
        (prompt(pad_width=3), "text-track vectors do not have width 4"),
        (
            Prompt(np.zeros((3, H), np.float32), np.zeros((1, 3), np.float32), np.zeros(H, np.float32)),
            "width 4",
        ),
        (prompt(fill=np.nan), "non-finite"),
        (prompt(fill=np.inf), "non-finite"),
    ],
)
def test_a_malformed_prompt_is_refused_before_it_reaches_a_step(bad, message):
    with pytest.raises(RequestError, match=message):
        build_prompt(Request("a", "hi"), lambda _r: bad, H, BlockManager(4, 4))


def test_a_non_finite_trailing_text_or_pad_vector_is_refused_too():
    bad = prompt()
    bad.pad_vector[1] = np.nan
    with pytest.raises(RequestError, match="non-finite"):
        build_prompt(Request("a", "hi"), lambda _r: bad, H, BlockManager(4, 4))


def test_a_prompt_must_leave_room_for_its_first_frame_in_the_kv_cache():
    blocks = BlockManager(num_blocks=2, block_size=4)  # 8 positions
    fits = prompt(positions=7)  # 7 prompt positions + the first generated one = 8
    assert build_prompt(Request("a", "hi"), lambda _r: fits, H, blocks) is fits
    with pytest.raises(RequestError, match="'a': prompt of 8 positions exceeds the KV cache"):
        build_prompt(Request("a", "hi"), lambda _r: prompt(positions=8), H, blocks)
