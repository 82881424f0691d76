"""SSML documents every door must refuse the same way, and how a test finds a break in the audio."""

from __future__ import annotations

import numpy as np

BREAK_750 = '<speak>Platform one.<break time="750ms"/>Platform two.</speak>'
"""Two sentences with 750 ms of silence (18,000 samples at 24 kHz) between them."""

LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE speak [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]><speak>&c;&c;&c;&c;</speak>'
)

HOSTILE = [
    (LAUGHS, "DOCTYPE is not allowed"),
    ("<speak>" + "<s>" * 10_000 + "x", "characters, at most"),  # never closed: it need not be
    ("<speak>" + "<s>" * 6_000 + "x", "nested deeper than 32"),
    ("<speak>" + "a<break/>" * 2_000 + "</speak>", "more than 100 breaks"),
]
"""(document, what the reason says): billion laughs, 10,000 and 6,000 nested elements, 2,000 breaks."""

INVALID = [
    ('<speak>Hi <break time="forever"/></speak>', "SSML line 1, column 11: break time"),
    ("<speak>Hi <s>there</speak>", "SSML line 1, column"),
    ('<speak><audio src="http://x/a.wav"/></speak>', "never a path or URL"),
    ('<speak><voice name="nobody">Hi</voice></speak>', "unknown voice 'nobody'"),
]
"""(document, what the reason says): markup no door accepts, each with its position or name."""


def longest_silence(samples: np.ndarray) -> tuple[int, int]:
    """(length, start) of the longest run of exact zero samples."""
    zero = np.concatenate([[False], samples == 0, [False]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))
    lengths = edges[1::2] - edges[0::2]
    longest = int(np.argmax(lengths))
    return int(lengths[longest]), int(edges[0::2][longest])
