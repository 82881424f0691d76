"""The first-audio requests of a bench run speak new sentences, as new announcements do: a sentence
repeated round after round is a prefix-cache hit after its first round, not a prefill."""

from qwen3tts.bench.workload import ttfa_sentence


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
