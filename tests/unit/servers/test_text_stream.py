"""Streaming text (Wyoming synthesize-chunk): sentences leave once complete, and words stay whole."""

import pytest

from qwen3tts.errors import RequestError
from qwen3tts.servers.synthesis import SpeechJob
from qwen3tts.servers.wyoming import _TextStream


class _Stream:
    """Stands in for a SpeechStream: the text stream only closes it when the text grows too long."""

    outcome = None

    def close(self, outcome=None):
        self.outcome = outcome


def feed(chunks, max_chars=2000):
    text = _TextStream(_Stream(), SpeechJob("-", "ryan", "english", None), max_chars)
    out = []
    for chunk in chunks:
        out.append([job.text for _, job in text.add(chunk)])
    out.append([job.text for _, job in text.finish()])
    return out


def test_a_sentence_leaves_once_the_next_one_is_long_enough_to_stand_alone():
    # the splitter joins a fragment under 12 characters to its neighbour, so "The sec" holds it back
    assert feed(["The first sentence is done. The sec", "ond one is still ", "coming.", ""]) == [
        [],
        ["The first sentence is done."],
        [],
        [],
        ["The second one is still coming."],
    ]


def test_a_chunk_boundary_after_a_space_does_not_glue_words_together():
    assert feed(["Please mind the gap between the train. Mind ", "the gap."])[-1] == ["Mind the gap."]


def test_every_sentence_carries_the_stream_voice():
    text = _TextStream(_Stream(), SpeechJob("-", "ryan", "german", "calm"), 2000)
    [(_, job)] = text.add("Erster Satz ist fertig. Zweiter Satz beginnt")
    assert (job.voice, job.language, job.instruct) == ("ryan", "german", "calm")


def test_streamed_text_over_the_limit_is_refused_once_and_closes_the_stream():
    text = _TextStream(_Stream(), SpeechJob("-", None, "auto", None), 20)
    text.add("Short enough. ")
    with pytest.raises(RequestError, match="too long"):
        text.add("This pushes it over the limit.")
    assert text.stream.outcome == "rejected"
    assert text.add("More text.") == []
