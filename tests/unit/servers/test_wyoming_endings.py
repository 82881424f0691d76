"""How a Wyoming connection's refusals are worded and coded (servers/wyoming_endings.py), called
directly; the same codes over a real socket are tests/integration/servers/test_wyoming_errors.py."""

import pytest

from qwen3tts.errors import RequestError
from qwen3tts.servers.gateway import Busy, InvalidField
from qwen3tts.servers.wyoming_endings import GONE, STALLED, error_code, failed, unexpected


class TooLong(RequestError):
    pass


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (Busy("every slot is taken"), "busy"),
        (InvalidField("voice", "unknown voice 'nobody'"), "RequestError"),
        (RequestError("refused"), "RequestError"),
        (TooLong("text too long"), "TooLong"),
    ],
)
def test_the_error_code_is_busy_or_the_refusals_class_name(exc, code):
    assert error_code(exc) == code


def test_a_failure_carries_its_error_event_and_the_outcome_of_the_open_streams():
    ending = failed("no slot within 30 s", "timeout", outcome="timeout")
    assert (ending.error.text, ending.error.code, ending.outcome, ending.abort) == (
        "no slot within 30 s",
        "timeout",
        "timeout",
        False,
    )
    assert failed("bad", "bad_event").outcome == "cancelled"


def test_a_client_that_left_is_told_nothing_and_a_stalled_one_is_dropped():
    assert (GONE.error, GONE.abort, GONE.outcome) == (None, False, "cancelled")
    assert (STALLED.error, STALLED.abort) == (None, True)


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("synthesize-start", "synthesize-start while a text stream is open: send synthesize-stop first"),
        ("synthesize-chunk", "synthesize-chunk without synthesize-start"),
        ("synthesize-stop", "synthesize-stop without synthesize-start"),
    ],
)
def test_a_stream_event_out_of_order_says_what_to_send(kind, message):
    assert unexpected(kind) == message


def test_an_unknown_event_names_itself_and_the_events_the_server_takes():
    message = unexpected("transcribe")
    assert message.startswith("unexpected event 'transcribe': this server takes describe, ping, synthesize")
    assert message.endswith("synthesize-start, -chunk and -stop")
