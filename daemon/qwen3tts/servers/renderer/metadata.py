"""The title in a controller's DIDL-Lite metadata (CurrentURIMetaData), read defensively.

The metadata is hostile XML: bounded in size, parsed by defusedxml (no entities, no external
references); whatever is wrong with it only loses the title, which then comes from the URL.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree as SafeXml
from defusedxml import DefusedXmlException

MAX_METADATA_CHARS = 16_384
MAX_TITLE_CHARS = 200


def media_title(metadata: str, uri: str) -> str:
    """dc:title of the first item, else the URL's last path part, printable and at most 200 chars."""
    title = _didl_title(metadata) if metadata and len(metadata) <= MAX_METADATA_CHARS else None
    if not title:
        title = unquote(urlsplit(uri).path.rsplit("/", 1)[-1]) or "media"
    return "".join(ch for ch in title if ch.isprintable()).strip()[:MAX_TITLE_CHARS] or "media"


def _didl_title(metadata: str) -> str | None:
    try:
        root = SafeXml.fromstring(metadata)
    except (ParseError, DefusedXmlException, ValueError):
        return None
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag.endswith("}title") and element.text:
            return element.text
    return None
