"""`<say-as interpret-as=...>`: its text read as the named kind, in the language it stands in.

What comes out is final: the lexicon and the normaliser do not read it again (prepare keeps it
verbatim), so `<say-as interpret-as="characters">GATE</say-as>` stays "G A T E".
"""

from __future__ import annotations

from qwen3tts.text.normalize import readings

KINDS = ("characters", "spell-out", "digits", "cardinal", "number", "ordinal", "date", "time", "telephone")


def render(kind: str, text: str, language: str, format: str | None = None) -> tuple[str, str | None]:
    """(what to say, a warning or None); ValueError when `text` is not of that kind."""
    if kind in ("characters", "spell-out"):
        return readings.characters(text, language), None
    if kind == "digits":
        return readings.digits(text, language), None
    if kind in ("cardinal", "number"):
        return readings.cardinal(text, language), None
    if kind == "ordinal":
        return readings.ordinal(text, language), None
    if kind == "date":
        return readings.date(text, language, format)
    if kind == "time":
        return readings.time(text, language), None
    if kind == "telephone":
        return readings.telephone(text, language), None
    raise ValueError(f"unknown kind {kind!r}")
