"""Fetching what a controller asks the renderer to play: hostile until it is in memory and bounded.

Only http and https URLs; at most `max_bytes` (a Content-Length over it is refused before the body,
a body that keeps coming is cut at the limit); the whole fetch (connect, redirects, body) within
`timeout_s`; a Content-Type that is not audio (or a generic octet stream, which the decoder then
judges) is refused before the body is read. Every refusal is a MediaError naming what was wrong and
the UPnP error code a controller gets for it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp

MAX_URL_CHARS = 2048
MAX_REDIRECTS = 3
_CHUNK = 65_536
GENERIC_TYPES = ("application/octet-stream", "binary/octet-stream", "application/ogg")
"""Types servers send for audio files too; the decoder decides (it knows only audio containers)."""

# UPnP AVTransport error codes (UPnP-av-AVTransport-v1, 2.4.x)
RESOURCE_NOT_FOUND = 716
ILLEGAL_MIME_TYPE = 714
CONTENT_BUSY = 715  # "content busy": used for a fetch that timed out or the outlet refused


class MediaError(Exception):
    """What was wrong with the media, and the UPnP error code that says so."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int
    timeout_s: float


def check_url(url: str) -> str:
    """The URL if the renderer may fetch it; MediaError otherwise."""
    if not url or len(url) > MAX_URL_CHARS or any(ord(ch) < 0x21 for ch in url):
        raise MediaError(
            "the URL is empty, too long or holds spaces or control characters", RESOURCE_NOT_FOUND
        )
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise MediaError(
            f"only http and https URLs are played, not {parts.scheme or 'none'}:", RESOURCE_NOT_FOUND
        )
    return url


def content_type_ok(content_type: str) -> bool:
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind.startswith("audio/") or kind in GENERIC_TYPES or kind == ""


async def fetch_media(session: aiohttp.ClientSession, url: str, limits: FetchLimits) -> bytes:
    """The body at `url` within the limits; MediaError otherwise."""
    check_url(url)
    try:
        async with asyncio.timeout(limits.timeout_s):
            return await _fetch(session, url, limits)
    except TimeoutError:
        raise MediaError(f"the media did not arrive within {limits.timeout_s:g} s", CONTENT_BUSY) from None
    except (aiohttp.ClientError, ValueError, UnicodeError) as exc:  # ValueError: a URL aiohttp cannot use
        raise MediaError(
            f"cannot fetch the media: {type(exc).__name__}: {exc}"[:300], RESOURCE_NOT_FOUND
        ) from None


async def _fetch(session: aiohttp.ClientSession, url: str, limits: FetchLimits) -> bytes:
    async with session.get(url, max_redirects=MAX_REDIRECTS, allow_redirects=True) as response:
        if response.status != 200:
            raise MediaError(f"the media server answered HTTP {response.status}", RESOURCE_NOT_FOUND)
        content_type = response.headers.get("Content-Type", "")
        if not content_type_ok(content_type):
            raise MediaError(f"not audio: Content-Type {content_type[:80]!r}", ILLEGAL_MIME_TYPE)
        declared = response.content_length
        if declared is not None and declared > limits.max_bytes:
            raise MediaError(
                f"the media is {declared} bytes, over the limit of {limits.max_bytes}", ILLEGAL_MIME_TYPE
            )
        body = bytearray()
        async for chunk in response.content.iter_chunked(_CHUNK):
            body += chunk
            if len(body) > limits.max_bytes:
                raise MediaError(
                    f"the media is over the limit of {limits.max_bytes} bytes", ILLEGAL_MIME_TYPE
                )
        return bytes(body)
