"""Announcement text -> sentence spans, without changing a character.

Sentence boundaries come from sentencex, which knows the abbreviations of every language the model
speaks (`Dr. Smith`, `St. Albans`, `z. B.`, `Sr. Silva` stay whole). Its sentences are located in the
input and returned as (start, end) offsets, so a piece is always a slice of what was sent: joining the
pieces gives the input back up to whitespace, whatever the library does with odd input.

Fragments too short to say well alone ("Hi.") join the next sentence; a sentence longer than
`max_weight` is cut again, at a clause boundary if there is one, else at a space that does not separate
a number from its unit, else at any space, else between two CJK characters; never inside a run of
non-space Latin characters, so a number, time, URL or word is never cut in two.
"""

from __future__ import annotations

import re
from itertools import pairwise

from sentencex import segment

from qwen3tts.text.languages import iso_code

MIN_WEIGHT = 12
MAX_WEIGHT = 240

Span = tuple[int, int]

# A clause ends at ,;: followed by a space (so 1,250 and 14:05 are not clause ends), or at CJK punctuation.
_CLAUSE_END = re.compile(r"[,;:](?=\s)|[，、；：]")
_SPACE = re.compile(r"\s+")
# The characters _is_cjk accepts, as one class (kana, ideographs, hangul, CJK punctuation, full width).
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")


def split_spans(
    text: str, language: str = "english", min_weight: int = MIN_WEIGHT, max_weight: int = MAX_WEIGHT
) -> list[Span]:
    """(start, end) of each piece of `text` in order; pieces hold no leading or trailing whitespace."""
    sentences = _merge_short(_sentence_spans(text, iso_code(language)), text, min_weight)
    return [part for span in sentences for part in _limit(text, span, max_weight)]


def split_spoken(spoken: str, max_weight: int = MAX_WEIGHT) -> list[str]:
    """A spoken form that normalisation made heavier than `max_weight` (a 2000-digit number read digit
    by digit), cut with the same preferences as a sentence; a token longer than the limit stays whole.
    """
    spans = [span for span in (_trim(spoken, 0, len(spoken)),) if span]
    return [spoken[a:b] for span in spans for a, b in _limit(spoken, span, max_weight)]


def weight(text: str) -> int:
    """Length in Latin-character equivalents: a CJK character carries about two letters' worth."""
    return 2 * len(text) - len(_CJK.sub("", text))  # the class counts in C, not per character here


def _sentence_spans(text: str, code: str) -> list[Span]:
    """sentencex's sentences as offsets into `text`, found in order; whatever is not found stays whole.

    A boundary is kept only where a space follows the sentence or CJK text meets it, so even an odd
    decision of the library ("£0.|٠0") never cuts a run of Latin characters.
    """
    cuts: list[int] = []
    position = 0
    for sentence in segment(code, text):
        core = sentence.strip()
        if not core:
            continue
        found = text.find(core, position)
        if found < 0:  # the library changed the text: trust only the boundaries found so far
            break
        if found > 0 and (found > position or _is_cjk(text[found - 1]) or _is_cjk(text[found])):
            cuts.append(found)
        position = found + len(core)
    bounds = [0, *sorted(set(cuts)), len(text)]
    return [s for s in (_trim(text, a, b) for a, b in pairwise(bounds)) if s]


def _trim(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _merge_short(spans: list[Span], text: str, min_weight: int) -> list[Span]:
    """Join fragments lighter than `min_weight` to the following sentence (the last to the previous)."""
    merged: list[Span] = []
    carry: Span | None = None
    for start, end in spans:
        current = (carry[0], end) if carry else (start, end)
        if weight(text[current[0] : current[1]]) >= min_weight:
            merged.append(current)
            carry = None
        else:
            carry = current
    if carry:
        if merged:
            merged[-1] = (merged[-1][0], carry[1])
        else:
            merged.append(carry)
    return merged


def _limit(text: str, span: Span, max_weight: int) -> list[Span]:
    """Cut an over-long sentence at the best boundary inside each window of `max_weight`."""
    parts: list[Span] = []
    start, end = span
    while (limit := _window_end(text, start, end, max_weight)) < end:  # O(max_weight) per cut
        cut = _best_cut(text, start, limit)
        if cut is None:  # one token longer than the limit (a long URL): it stands alone, whole
            space = _SPACE.search(text, limit, end)
            if space is None:
                break
            cut = space.start()
        piece, rest = _trim(text, start, cut), _trim(text, cut, end)
        if piece is None or rest is None:
            break
        parts.append(piece)
        start, end = rest
    parts.append((start, end))
    return parts


def _window_end(text: str, start: int, end: int, max_weight: int) -> int:
    total = 0
    for index in range(start, end):
        total += 2 if _is_cjk(text[index]) else 1
        if total > max_weight:
            return index
    return end


def _best_cut(text: str, start: int, limit: int) -> int | None:
    """The offset to cut at in text[start:limit], by preference; None when there is no safe place."""
    window = text[start:limit]
    floor = len(window) // 3  # a cut in the first third leaves a stub; prefer a later one
    clause = [m.end() for m in _CLAUSE_END.finditer(window) if m.end() > floor]
    if clause:
        return start + clause[-1]
    spaces = [m.start() for m in _SPACE.finditer(window) if m.start() > 0]
    calm = [i for i in spaces if not _number_then_word(window, i)]
    if calm or spaces:
        return start + (calm or spaces)[-1]
    cjk = [i for i in range(len(window) - 1, 0, -1) if _is_cjk(window[i - 1]) and _is_cjk(window[i])]
    return start + cjk[0] if cjk else None


def _number_then_word(window: str, index: int) -> bool:
    """True at the space of `12 km`, `2:30 pm`, `Gate B12`: a digit on either side keeps the pair."""
    before = window[index - 1]
    after_match = _SPACE.match(window, index)
    after = window[after_match.end()] if after_match and after_match.end() < len(window) else ""
    return before.isdigit() or after.isdigit()


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x9FFF  # CJK ideographs
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
        or 0xF900 <= code <= 0xFAFF
        or 0x3000 <= code <= 0x303F  # CJK punctuation
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
    )
