"""The frame-cap warning (engine/runaway.py) read off a real Sequence's Handle: said only for a request
that ended at its frame cap, with that request's frame count and duration. How the announcer carries it
into the `finished` event is tests/unit/appliance/announcements/test_runaway_warning.py."""

import numpy as np
import pytest

from qwen3tts.engine.config import SamplingParams
from qwen3tts.engine.runaway import runaway_warning
from qwen3tts.engine.sequence import Handle, Prompt, Request, Sequence, SequenceStatus


def handle_with(frames: int, status: SequenceStatus) -> Handle:
    hidden = 2
    prompt = Prompt(
        np.zeros((3, hidden), np.float32), np.zeros((0, hidden), np.float32), np.zeros(hidden, np.float32)
    )
    seq = Sequence(Request("a", "hello"), prompt, SamplingParams(), max_frames=frames + 1)
    for _ in range(frames):
        seq.append_frame(np.zeros(16, np.int64), np.zeros(hidden, np.float32))
    seq.status = status
    return Handle(seq, cancel=lambda _id: False)


def test_a_sentence_stopped_at_the_frame_cap_is_named_with_its_frames_and_seconds():
    warning = runaway_warning(handle_with(25, SequenceStatus.FINISHED_LENGTH), sentence=3)
    assert warning == (
        "sentence 3 was stopped at the frame cap (25 frames, 2.0 s): the model did not end its speech"
    )


@pytest.mark.parametrize(
    "status",
    [
        SequenceStatus.FINISHED_STOPPED,
        SequenceStatus.FINISHED_CANCELLED,
        SequenceStatus.FINISHED_ERROR,
        SequenceStatus.RUNNING,
    ],
)
def test_any_other_ending_or_a_running_request_has_no_warning(status):
    assert runaway_warning(handle_with(25, status), sentence=1) is None
