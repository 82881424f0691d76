"""Which of the bundle's languages a text is written in, for the normaliser (the model still gets auto).

The script decides most cases for free: kana is Japanese, hangul Korean, Han Chinese, Cyrillic Russian.
Only Latin-script text needs a statistical detector: py3langid (langid.py's model), limited to the
bundle's Latin-script languages, is loaded on first use (about two seconds and 100 MB) and kept.
`warm_up` lets a daemon pay that at start rather than on its first `auto` announcement.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

from qwen3tts.text.languages import MODEL_LANGUAGES

log = logging.getLogger(__name__)

LATIN_LANGUAGES = ("english", "german", "french", "spanish", "italian", "portuguese")
_ISO = {"english": "en", "german": "de", "french": "fr", "spanish": "es", "italian": "it", "portuguese": "pt"}
_lock = threading.Lock()
_detectors: dict[tuple[str, ...], Any] = {}  # candidates -> py3langid LanguageIdentifier


def detect_language(text: str, supported: Iterable[str] = MODEL_LANGUAGES) -> str:
    """The most likely supported language of `text`; english (or the first supported) when unsure."""
    names = tuple(name.lower() for name in supported)
    fallback = "english" if "english" in names else (names[0] if names else "english")
    script = _dominant_script(text)
    by_script = {"kana": "japanese", "hangul": "korean", "han": "chinese", "cyrillic": "russian"}
    if script in by_script:
        wanted = by_script[script]
        if wanted in names:
            return wanted
        return "chinese" if script == "kana" and "chinese" in names else fallback
    latin = tuple(name for name in LATIN_LANGUAGES if name in names)
    if script != "latin" or len(latin) <= 1:
        return latin[0] if latin else fallback
    return _latin_language(text, latin) or fallback


def warm_up(supported: Iterable[str] = MODEL_LANGUAGES) -> None:
    """Build the detector now (seconds) so the first `auto` announcement does not wait for it."""
    latin = tuple(name for name in LATIN_LANGUAGES if name in {s.lower() for s in supported})
    if len(latin) > 1:
        _detector(latin)


def _dominant_script(text: str) -> str | None:
    counts: Counter[str] = Counter()
    for ch in text:
        script = _script(ord(ch))
        if script:
            counts[script] += 1
    if counts["kana"]:  # Japanese mixes kanji and kana; any kana means Japanese, not Chinese
        counts["kana"] += counts.pop("han", 0)
    if not counts:
        return None
    # CJK characters carry about two Latin letters' worth, as in the splitter's weight
    return max(counts, key=lambda s: counts[s] * (1 if s in ("latin", "cyrillic") else 2))


def _script(code: int) -> str | None:
    if 0x41 <= code <= 0x5A or 0x61 <= code <= 0x7A or 0xC0 <= code <= 0x24F:
        return "latin"
    if 0x3040 <= code <= 0x30FF:
        return "kana"
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF:
        return "hangul"
    if 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF:
        return "han"
    if 0x400 <= code <= 0x4FF:
        return "cyrillic"
    return None


def _latin_language(text: str, candidates: tuple[str, ...]) -> str | None:
    code, _probability = _detector(candidates).classify(text)
    return next((name for name in candidates if _ISO[name] == code), None)


def _detector(candidates: tuple[str, ...]) -> Any:
    """The identifier restricted to `candidates`, built once (py3langid is imported only when needed)."""
    with _lock:
        if candidates not in _detectors:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            log.info("loading the language identifier for %s", ", ".join(candidates))
            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            identifier.set_languages([_ISO[name] for name in candidates])
            _detectors[candidates] = identifier
        return _detectors[candidates]
