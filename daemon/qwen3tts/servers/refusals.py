"""Why a network request is refused before any audio: no slot free (Busy), or a field refused
(InvalidField). Both are RequestErrors: each door answers them with its own status or error code."""

from __future__ import annotations

from qwen3tts.errors import RequestError


class Busy(RequestError):
    """Every network request slot is taken; the client should retry later."""


class InvalidField(RequestError):
    """A request field refused before any engine work; `field` is text, voice or language."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
