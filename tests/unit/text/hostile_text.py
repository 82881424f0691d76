"""Random and adversarial texts for the text front end's time bounds (seeded: a failure reproduces)."""

from __future__ import annotations

import random

MAX_CHARS = 2000  # the daemon's default engine.max_text_chars

# Characters the rules react to, so random text hits digits, separators, units and scripts often.
ALPHABET = "0123456789" * 4 + " ,.:;-+/%€$£¥°()@_~!?'\n\tEeapmhkgsABCZxw。，年月日元号第次点번시ß٣²½"
# Fragments that make a backtracking pattern retry: runs of what one group matches, then a misfit.
FRAGMENTS = (
    "1,", "1.", "1 ", "1:", "1-", "+1 ", "1E-", "1,000", "1.000", "000 ", "a ", "a", "aa", "1a", "www.",
    "a@", "@a.", "http://", "x", " ", "\t ", "第2", "元", "12:30", "2024-03-05", "Dr. ", "St. ", "km/h",
    "B12", "ICE ", "-", ".", ",", "%", "£9", "9",
)  # fmt: skip
MISFITS = ("!", "", "x", "%", ".", " ", "a", "\u0000", "é")


def hostile_texts(count: int, seed: int = 27, max_chars: int = MAX_CHARS) -> list[str]:
    """`count` texts of 1 to `max_chars` characters: random, repeated fragments, runs with a misfit."""
    rng = random.Random(seed)
    texts = []
    for index in range(count):
        length = max(1, min(max_chars, int(max_chars ** rng.random())))  # log-uniform: short and long
        if index % 10 == 0:
            length = max_chars  # every tenth at the maximum, where a quadratic cost shows most
        kind = index % 4
        if kind == 0:
            text = "".join(rng.choice(ALPHABET) for _ in range(length))
        elif kind == 1:
            fragment = rng.choice(FRAGMENTS)
            text = (fragment * (length // len(fragment) + 1))[:length]
        elif kind == 2:
            fragment = rng.choice(FRAGMENTS)
            misfit = rng.choice(MISFITS)
            text = (fragment * (length // len(fragment) + 1))[: max(0, length - len(misfit))] + misfit
        else:
            text = "".join(chr(_code_point(rng)) for _ in range(length))
        texts.append(text)
    return texts


def _code_point(rng: random.Random) -> int:
    code = rng.choice((rng.randrange(0x20, 0x250), rng.randrange(0x3000, 0xA000), rng.randrange(0, 0x10FFFF)))
    return 0xFFFD if 0xD800 <= code <= 0xDFFF else code  # no lone surrogates: prepare() refuses those
