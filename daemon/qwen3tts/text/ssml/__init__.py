"""SSML, the useful subset, read into the same blocks of text the plain-text path reads.

    document = parse_ssml('<speak>Gate <say-as interpret-as="characters">B12</say-as>.</speak>', languages)
    document.blocks, document.text, document.warnings

parser.py reads the XML (hardened: defusedxml, bounded), say_as.py renders `<say-as>`, document.py
turns what the parser met into blocks, limits.py holds the bounds. docs/text.md lists the elements.
"""

from __future__ import annotations

from qwen3tts.text.ssml.document import Block, SSMLDocument
from qwen3tts.text.ssml.parser import SSMLError, parse_ssml

__all__ = ["Block", "SSMLDocument", "SSMLError", "is_ssml", "parse_ssml"]


def is_ssml(text: str) -> bool:
    """Whether a text should be read as SSML when nobody said: it starts with `<speak`, an XML
    declaration or a DOCTYPE (refused then, rather than read aloud), as MQTT payloads and
    `qwen3tts text` decide it."""
    return text.lstrip().startswith(("<speak", "<?xml", "<!DOCTYPE"))
