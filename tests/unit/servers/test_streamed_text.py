"""Streaming text (Wyoming synthesize-chunk) into a SpeechStream: sentences leave once complete, words stay
whole, and the stream's voice fields are those validated at open; StreamedText alone: what it counts and
what `flush` leaves."""

from types import SimpleNamespace

import pytest

from qwen3tts.errors import RequestError
from qwen3tts.servers.gateway import Gateway
from qwen3tts.servers.metrics import ServerMetrics
from qwen3tts.servers.offer import Offer
from qwen3tts.servers.streamed_text import StreamedText
from qwen3tts.settings import VoiceSettings

SPEC = SimpleNamespace(speakers=("ryan",), languages=("english", "german"))


@pytest.fixture
def gateway():
    def make(max_chars=2000, **voice):
        offer = Offer.from_spec("fake", SPEC, VoiceSettings(**voice))
        # no engine: nothing here is submitted
        gateway = Gateway(
            None, offer, ServerMetrics(None), max_concurrent=2, max_text_chars=max_chars, max_frames=40
        )
        made.append(gateway)
        return gateway

    made = []
    yield make
    for gateway in made:
        gateway.shutdown()


def feed(gateway, chunks):
    stream = gateway().open_stream("wyoming", "ryan", "en")
    return [stream.feed(chunk) for chunk in chunks] + [stream.flush()]


def test_a_sentence_leaves_once_the_next_one_is_long_enough_to_stand_alone(gateway):
    # the splitter joins a fragment under 12 characters to its neighbour, so "The sec" holds it back
    assert feed(gateway, ["The first sentence is done. The sec", "ond one is still ", "coming.", ""]) == [
        [],
        ["The first sentence is done."],
        [],
        [],
        ["The second one is still coming."],
    ]


def test_a_chunk_boundary_after_a_space_does_not_glue_words_together(gateway):
    assert feed(gateway, ["Please mind the gap between the train. Mind ", "the gap."])[-1] == [
        "Mind the gap."
    ]


def test_the_stream_carries_the_voice_fields_validated_at_open(gateway):
    stream = gateway(instruct="calm").open_stream("wyoming", "RYAN", "de-DE")
    assert (stream.voice, stream.language, stream.instruct) == ("ryan", "german", "calm")
    assert stream.feed("Erster Satz ist fertig. Zweiter Satz beginnt") == ["Erster Satz ist fertig."]


def test_streamed_text_over_the_limit_is_refused_once_and_closes_the_stream(gateway):
    streams = gateway(max_chars=20)
    stream = streams.open_stream("wyoming")
    stream.feed("Short enough. ")
    with pytest.raises(RequestError, match="too long"):
        stream.feed("This pushes it over the limit.")
    assert stream.outcome == "rejected" and streams.streams == set()
    assert stream.feed("More text.") == []


@pytest.mark.parametrize(
    ("text", "ends"),
    [("The light is on.", True), ("Is it? ", True), ('He said "stop."', True), ("完了。", True),
     ("The light is", False), ("Costs 3.5", False), ("", False), ("Wait,", False)],
)  # fmt: skip
def test_streamed_text_knows_when_it_ends_in_sentence_punctuation(gateway, text, ends):
    stream = gateway().open_stream("wyoming", "ryan", "en")
    assert stream.feed(text) == []
    assert stream.ends_sentence() is ends


def test_every_character_added_counts_towards_the_limit_even_once_returned():
    text = StreamedText("english")
    text.add("The first sentence is done. ")
    assert text.add("The second one is long enough.") == ["The first sentence is done."]
    assert text.chars == len("The first sentence is done. ") + len("The second one is long enough.")


def test_whitespace_alone_is_no_sentence():
    text = StreamedText("english")
    assert text.add("   ") == [] and text.add("\n") == []
    assert text.flush() == []


def test_flush_returns_the_rest_once_stripped_and_empties_the_buffer():
    text = StreamedText("english")
    text.add("  Platform four ")
    assert text.flush() == ["Platform four"]
    assert text.flush() == []
    assert not text.ends_sentence()


def test_sentences_in_another_language_split_by_its_punctuation():
    text = StreamedText("chinese")
    assert text.add("各位旅客请注意，列车即将进站。请站在黄线以外") == ["各位旅客请注意，列车即将进站。"]
    assert text.flush() == ["请站在黄线以外"]
