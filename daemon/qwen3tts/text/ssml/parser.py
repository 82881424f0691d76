"""SSML -> runs, boundaries and chimes, read with defusedxml's SAX parser (expat, hardened).

defusedxml refuses a DTD, entity declarations and external references before anything is expanded,
so a billion-laughs document or one that names a file or URL fails at its first declaration. Our own
bounds (document size, nesting depth, element and break counts, silence) stop the rest early: the
handler raises at the first element past a bound, so 10,000 nested elements cost 33 start tags.
Every error names the line and column where the parser stood.
"""

from __future__ import annotations

import re
import xml.sax
from collections.abc import Collection
from dataclasses import dataclass

import defusedxml.common
import defusedxml.sax

from qwen3tts.errors import RequestError
from qwen3tts.text.languages import resolve_language
from qwen3tts.text.ssml import say_as
from qwen3tts.text.ssml.document import Boundary, Chime, Run, SSMLDocument, assemble
from qwen3tts.text.ssml.limits import (
    BREAK_STRENGTHS,
    EMPHASIS_LEVELS,
    MAX_BREAK_MS,
    MAX_BREAKS,
    MAX_DEPTH,
    MAX_DOCUMENT_CHARS,
    MAX_ELEMENTS,
    MAX_SILENCE_MS,
    RATE_RANGE,
    parse_rate,
    parse_time_ms,
)

_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")  # a voice or chime name (never a path: no '/')
_SPACES = re.compile(r"\s+")
_QUIET = {"mark", "meta", "metadata", "desc"}  # known, with nothing to say
_SKIPPED_CONTENT = {"meta", "metadata", "desc", "lexicon"}


class SSMLError(RequestError):
    """An SSML document that is not well-formed, uses markup we refuse, or exceeds a bound."""


@dataclass
class _Frame:
    name: str
    language: str | None
    voice: str | None
    rate: float
    emphasis: str | None
    skip: bool = False  # inside <audio> fallback, <desc>, <metadata>: the text is not said
    collect: list[str] | None = None  # say-as / sub: their text is rendered at the end tag
    attributes: dict[str, str] | None = None


def parse_ssml(
    text: str,
    languages: Collection[str],
    chimes: Collection[str] | None = None,
    default_language: str = "english",
) -> SSMLDocument:
    """The document's blocks; SSMLError with the reason and position when it cannot be read.

    `default_language` is how say-as reads outside any `<lang>`: the announcement's language.
    """
    if len(text) > MAX_DOCUMENT_CHARS:
        raise SSMLError(f"SSML document is {len(text)} characters, at most {MAX_DOCUMENT_CHARS}")
    handler = _Handler(tuple(languages), chimes, default_language)
    try:
        defusedxml.sax.parseString(text.encode("utf-8"), handler, forbid_dtd=True)
    except xml.sax.SAXParseException as exc:
        raise SSMLError(
            f"SSML line {exc.getLineNumber()}, column {exc.getColumnNumber() + 1}: {exc.getMessage()}"
        ) from None
    except defusedxml.common.DTDForbidden:
        raise SSMLError(f"SSML {handler.where()}: a DOCTYPE is not allowed (no DTD, no entities)") from None
    except (defusedxml.common.EntitiesForbidden, defusedxml.common.ExternalReferenceForbidden):
        raise SSMLError(f"SSML {handler.where()}: entities and external references are not allowed") from None
    return assemble(handler.items, handler.warnings)


class _Handler(xml.sax.handler.ContentHandler):
    def __init__(self, languages: tuple[str, ...], chimes: Collection[str] | None, default_language: str):
        super().__init__()
        self.languages, self.chimes, self.default_language = languages, chimes, default_language
        self.items: list[Run | Boundary | Chime] = []
        self.warnings: list[str] = []
        self.stack: list[_Frame] = []
        self.elements = self.breaks = self.silence_ms = 0
        self._locator = None

    def setDocumentLocator(self, locator) -> None:
        self._locator = locator

    def where(self) -> str:
        if self._locator is None:
            return "line 1, column 1"
        return f"line {self._locator.getLineNumber()}, column {self._locator.getColumnNumber() + 1}"

    def fail(self, message: str) -> SSMLError:
        return SSMLError(f"SSML {self.where()}: {message}")

    # ---- elements ----

    def startElement(self, name: str, attrs) -> None:
        self.elements += 1
        if len(self.stack) >= MAX_DEPTH:
            raise self.fail(f"elements nested deeper than {MAX_DEPTH}")
        if self.elements > MAX_ELEMENTS:
            raise self.fail(f"more than {MAX_ELEMENTS} elements")
        if not self.stack and name != "speak":
            raise self.fail(f"the root element must be <speak>, not <{name}>")
        parent = self.stack[-1] if self.stack else _Frame("", None, None, 1.0, None)
        if parent.collect is not None:
            raise self.fail(f"<{parent.name}> holds text only, not <{name}>")
        attributes = dict(attrs.items())
        frame = _Frame(name, parent.language, parent.voice, parent.rate, parent.emphasis, parent.skip)
        frame.attributes = attributes
        handler = getattr(self, f"_start_{name.replace('-', '_')}", None)
        if parent.skip:
            pass
        elif handler is not None:
            handler(frame, attributes)
        elif name in _SKIPPED_CONTENT:
            frame.skip = True
        elif name not in _QUIET:
            self.warnings.append(
                f"SSML {self.where()}: <{name}> is not supported and was ignored (its text is read)"
            )
        self.stack.append(frame)

    def endElement(self, name: str) -> None:
        frame = self.stack.pop()
        if frame.collect is not None and not frame.skip:
            self.items.append(self._rendered(frame))
        if name in ("p", "s") and not frame.skip:
            self.items.append(Boundary())

    def characters(self, content: str) -> None:
        frame = self.stack[-1] if self.stack else None
        if frame is None or frame.skip:
            return
        if frame.collect is not None:
            frame.collect.append(content)
            return
        text = _SPACES.sub(" ", content)
        if text:
            self.items.append(Run(text, frame.language, frame.voice, frame.rate, emphasis=frame.emphasis))

    # ---- one method per supported element ----

    def _start_speak(self, frame: _Frame, attributes: dict[str, str]) -> None:
        if self.stack:
            raise self.fail("<speak> inside <speak>")
        if "xml:lang" in attributes:
            frame.language = self._language(attributes["xml:lang"])

    def _start_p(self, frame: _Frame, attributes: dict[str, str]) -> None:
        self.items.append(Boundary())

    _start_s = _start_p

    def _start_break(self, frame: _Frame, attributes: dict[str, str]) -> None:
        self.breaks += 1
        if self.breaks > MAX_BREAKS:
            raise self.fail(f"more than {MAX_BREAKS} breaks and chimes")
        if "time" in attributes:
            milliseconds = parse_time_ms(attributes["time"])
            if milliseconds is None or milliseconds > MAX_BREAK_MS:
                raise self.fail(
                    f"break time {attributes['time']!r} must be like 750ms or 1.5s, at most {MAX_BREAK_MS} ms"
                )
        else:
            strength = attributes.get("strength", "medium")
            if strength not in BREAK_STRENGTHS:
                raise self.fail(f"break strength {strength!r} is not one of {', '.join(BREAK_STRENGTHS)}")
            milliseconds = BREAK_STRENGTHS[strength]
        self.silence_ms += milliseconds
        if self.silence_ms > MAX_SILENCE_MS:
            raise self.fail(f"more than {MAX_SILENCE_MS} ms of breaks in one document")
        self.items.append(Boundary(milliseconds))

    def _start_say_as(self, frame: _Frame, attributes: dict[str, str]) -> None:
        kind = attributes.get("interpret-as")
        if kind not in say_as.KINDS:
            raise self.fail(f"say-as interpret-as={kind!r} is not one of {', '.join(say_as.KINDS)}")
        frame.collect = []

    def _start_sub(self, frame: _Frame, attributes: dict[str, str]) -> None:
        if not attributes.get("alias", "").strip():
            raise self.fail("<sub> needs an alias (what to say instead)")
        frame.collect = []

    def _start_lang(self, frame: _Frame, attributes: dict[str, str]) -> None:
        if "xml:lang" not in attributes:
            raise self.fail("<lang> needs xml:lang")
        frame.language = self._language(attributes["xml:lang"])

    def _start_prosody(self, frame: _Frame, attributes: dict[str, str]) -> None:
        for ignored in sorted(set(attributes) - {"rate"}):
            self.warnings.append(f"SSML {self.where()}: prosody {ignored} is not supported and was ignored")
        if "rate" in attributes:
            factor = parse_rate(attributes["rate"])
            if factor is None:
                raise self.fail(f"prosody rate {attributes['rate']!r} is not x-slow..x-fast, 80% or +10%")
            frame.rate = round(frame.rate * factor, 4)
            low, high = RATE_RANGE
            if not low <= frame.rate <= high:
                raise self.fail(f"prosody rate comes to {frame.rate:g}, outside {low:g} to {high:g}")

    def _start_emphasis(self, frame: _Frame, attributes: dict[str, str]) -> None:
        level = attributes.get("level", "moderate")
        if level not in EMPHASIS_LEVELS:
            raise self.fail(f"emphasis level {level!r} is not one of {', '.join(EMPHASIS_LEVELS)}")
        frame.emphasis = level

    def _start_voice(self, frame: _Frame, attributes: dict[str, str]) -> None:
        name = attributes.get("name")
        if name is None or not _NAME.fullmatch(name):
            raise self.fail(f"voice name {name!r} must be 1-64 letters, digits, '.', '_' or '-'")
        for ignored in sorted(set(attributes) - {"name"}):
            self.warnings.append(f"SSML {self.where()}: voice {ignored} is not supported and was ignored")
        frame.voice = name

    def _start_audio(self, frame: _Frame, attributes: dict[str, str]) -> None:
        source = attributes.get("src", "")
        if not _NAME.fullmatch(source) or source.startswith("."):
            raise self.fail(f"audio src {source[:80]!r} must name a configured chime, never a path or URL")
        if self.chimes is not None and source not in self.chimes:
            known = ", ".join(sorted(self.chimes)) or "none configured"
            raise self.fail(f"audio src {source!r} is not a configured chime (known: {known})")
        self.breaks += 1
        if self.breaks > MAX_BREAKS:
            raise self.fail(f"more than {MAX_BREAKS} breaks and chimes")
        self.items.append(Chime(source))
        frame.skip = True  # its content is the fallback for when the audio cannot play: not said

    # ---- helpers ----

    def _language(self, tag: str) -> str | None:
        try:
            name = resolve_language(tag, self.languages)
        except RequestError as exc:
            raise self.fail(str(exc)) from None
        return None if name == "auto" else name

    def _rendered(self, frame: _Frame) -> Run:
        content = _SPACES.sub(" ", "".join(frame.collect or ())).strip()
        attributes = frame.attributes or {}
        if frame.name == "sub":
            said = attributes["alias"].strip()
        else:
            kind = attributes["interpret-as"]
            try:
                said, warning = say_as.render(
                    kind, content, frame.language or self.default_language, attributes.get("format")
                )
            except ValueError as exc:
                raise self.fail(f"say-as interpret-as={kind!r}: {exc}") from None
            if warning:
                self.warnings.append(f"SSML {self.where()}: {warning}")
        return Run(said, frame.language, frame.voice, frame.rate, verbatim=True, emphasis=frame.emphasis)
