"""The bench's texts. The first-audio requests speak new sentences, as new announcements do: a sentence
repeated round after round is a prefix-cache hit after its first round, not a prefill. The throughput
runs' filler text is the shortest with the asked prompt length."""

import numpy as np

from qwen3tts.bench.workload import fixed_length_text, ttfa_sentence
from qwen3tts.engine.sequence import Prompt


def test_every_request_of_a_run_speaks_a_sentence_of_its_own():
    sentences = [ttfa_sentence(i) for i in range(144)]
    assert len(set(sentences)) == 144
    assert {len(sentence.split()) for sentence in sentences} == {12}  # the same length to time
    assert ttfa_sentence(144) == ttfa_sentence(0)  # then again


def test_requests_in_a_row_differ_from_their_second_word_so_that_only_the_shared_prompt_is_cached():
    # the prefix cache keeps whole blocks of positions: a difference at the text's end would leave most
    # of the text cached from the request before
    for index in (0, 5, 30):
        first, second = ttfa_sentence(index).split(), ttfa_sentence(index + 1).split()
        assert next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b) == 1


class _Positions:
    """A prompt builder whose prompt is 8 positions plus `per_word` for each word of the text."""

    def __init__(self, per_word: int):
        self.per_word = per_word

    def __call__(self, request):
        rows = 8 + self.per_word * len(request.text.split())
        return Prompt(np.zeros((rows, 4), np.float32), np.zeros((0, 4), np.float32), np.zeros(4, np.float32))


def test_the_filler_text_grows_to_the_asked_prompt_and_stops_when_the_text_is_streamed():
    text, positions = fixed_length_text(_Positions(per_word=1), 48, None, "english")
    assert positions == 48 and len(text.split()) == 40  # whole text: the prompt grows with it
    text, positions = fixed_length_text(_Positions(per_word=0), 48, None, "english")
    assert positions == 8 and len(text.split()) == 48  # streamed: it never grows, the text stops
