"""Text that arrives in chunks (Wyoming's synthesize-chunk) -> whole sentences, as soon as they are complete.

A sentence leaves once the next one has begun (the splitter is the announcements', synthesis.sentences);
the last piece may still grow, so it stays until more text, the end of the text (`flush`), or a pause
after sentence punctuation (`ends_sentence`: the Wyoming connection's timer) says it is whole.
"""

from __future__ import annotations

import re

from qwen3tts.synthesis import sentences

SENTENCE_END = re.compile(r"[.!?…。！？][\"'”’)\]»」』]*\s*$")
"""Sentence punctuation at the end of the text, maybe followed by closing quotes or brackets."""


class StreamedText:
    def __init__(self, language: str):
        self.language = language
        self.chars = 0  # every character added, for the stream's length limit
        self._rest = ""  # text not yet returned as a sentence

    def add(self, chunk: str) -> list[str]:
        """The sentences `chunk` completes (every piece but the last, which may still grow)."""
        self.chars += len(chunk)
        self._rest += chunk
        pieces = sentences(self._rest, self.language) if self._rest.strip() else []
        if len(pieces) < 2:
            return []
        # the last piece may continue in the next chunk; keep a trailing space so words do not join
        self._rest = pieces[-1] + (" " if self._rest[-1:].isspace() else "")
        return pieces[:-1]

    def ends_sentence(self) -> bool:
        """Whether the text not yet returned ends in sentence punctuation."""
        return bool(SENTENCE_END.search(self._rest))

    def flush(self) -> list[str]:
        """The text not yet returned, as one sentence or none."""
        rest, self._rest = self._rest.strip(), ""
        return [rest] if rest else []
