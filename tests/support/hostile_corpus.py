"""A generated corpus of malformed and sloppy payloads for every command topic (Hypothesis strategies).

Shared by the unit property test (thousands of payloads through the real intake) and the
integration test (a sample through a real mosquitto). The strategies aim at what broke before:
lone surrogates and control characters in any field, invisible text, deep nesting, huge numbers,
NaN/Infinity, wrong types, oversized payloads, truncated JSON, bad ids and scopes.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

SAY_KEYS = (
    "text",
    "id",
    "lang",
    "voice",
    "speaker",
    "instruct",
    "priority",
    "volume",
    "chime",
    "repeat",
    "repeat_interval",
    "ttl",
    "expires_at",
    "interrupt",
    "sessionId",
    "normalize",
    "seed",
    "cache",
    "siteId",
    "scope",
    "zones",
)
COMMAND_SUFFIXES = ("say", "stop", "volume/set", "voice/set")
HERMES_SAY = "hermes/tts/say"
SATELLITE = "porch"
"""The Hermes satellite of the unit door (a zone of it): its playFinished is read."""
PLAY_FINISHED = f"hermes/audioServer/{SATELLITE}/playFinished"
GET_VOICES = ("rhasspy/tts/getVoices", "hermes/tts/getVoices")
ZONE_SAY = "qwen3tts/zone/default/say"
"""A zone topic (the unit door's one zone): a say there is for that zone only."""
ANSWERS = {
    "say": {"queued", "expired", "rejected"},
    ZONE_SAY: {"queued", "expired", "rejected"},
    HERMES_SAY: {"queued", "expired", "rejected"},
    "stop": {"stopped", "not_found", "rejected"},
    "volume/set": {"volume_set", "rejected"},
    "voice/set": {"voice_set", "rejected"},
}
"""The documented answers to a message on each topic (docs/mqtt.md): exactly one of these, never `error`."""

nasty_chars = st.sampled_from(
    ["\x00", "\x07", "\x1b", "\n", "\r", "\u200b", "\ufeff", "\u2028", "\ud800", "\udfff", "+", "#", "/"]
)
nasty_strings = st.one_of(
    st.text(max_size=40),
    st.lists(st.one_of(nasty_chars, st.text(max_size=3)), max_size=12).map("".join),
    st.sampled_from(
        [
            "",
            " ",
            "auto",
            "english",
            "ryan",
            "none",
            "default",
            "emergency",
            "all",
            "id",
            "a\nINFO x",
            SATELLITE,
            f"{SATELLITE}/x",
            "porch/#",
        ]
    ),
    st.integers(min_value=129, max_value=3000).map(lambda n: "x" * n),
)
numbers = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 0.5, 1.5, 2**32, 10**6]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, nasty_strings)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(nasty_strings, inner, max_size=3)),
    max_leaves=8,
)
zone_names = st.one_of(
    st.sampled_from(["default", "platform-3", "", "a/b", "+", "#", "x" * 65, "zone\n2", "\ud800"]),
    nasty_strings,
)
zone_lists = st.one_of(
    st.lists(zone_names, max_size=4),
    st.lists(st.just("default"), min_size=33, max_size=40),  # more zones than a say may name
    st.lists(st.one_of(zone_names, numbers, st.none()), max_size=3),
)
objects = st.dictionaries(
    st.one_of(st.sampled_from(SAY_KEYS), nasty_strings), st.one_of(values, zone_lists), max_size=8
)


def _json(obj) -> bytes:
    # ensure_ascii escapes lone surrogates as \udxxx, the way a hostile client would send them.
    return json.dumps(obj, ensure_ascii=True, allow_nan=True).encode()


def _deep(n: int, key_first: bool) -> bytes:
    inner = "[" * n + "]" * n
    return (f'{{"text": "x", "id": "deep", "z": {inner}}}' if key_first else inner).encode()


payloads = st.one_of(
    objects.map(_json),
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.builds(_deep, st.integers(min_value=10, max_value=20_000), st.booleans()),
    st.integers(min_value=20, max_value=6000).map(
        lambda n: ('{"text": "x", "repeat": ' + "9" * n + "}").encode()
    ),
    objects.map(_json).flatmap(lambda b: st.integers(0, len(b)).map(lambda i: b[:i])),
    st.sampled_from(
        [
            b"NaN",
            b"Infinity",
            b"-inf",
            b"1e999",
            b'{"text": "hi", "volume": NaN}',
            b'{"text": "hi", "ttl": Infinity}',
            b'{"text": "\\u200b\\ufeff"}',
            b'{"text": "hi", "id": "a\\nINFO fake"}',
            b"\xef\xbb\xbf",
            b"x" * 70_000,
            b'{"scope": "id"}',
            b'{"scope": "id", "id": "\\ud800"}',
        ]
    ),
)
topics = st.sampled_from((*COMMAND_SUFFIXES, HERMES_SAY))
satellite_topics = st.sampled_from((PLAY_FINISHED, *GET_VOICES))
"""A satellite's playFinished (never answered) and getVoices (voices, `rejected`, or nothing for a site
not ours): for a door with the satellite `porch`."""
