"""What an SSML document becomes: blocks of text with the marks the audio side needs.

A block is a stretch of the document's text that is read in one go: its own language, voice and
rate, silence before and after it. A new block starts wherever one of those changes, at `<p>`, `<s>`
and `<break>`, and at every `<audio>` (a block of its own that plays a chime). The blocks' texts are
joined with a newline into one text, so each piece can point into it like a piece of plain text.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

Span = tuple[int, int]
EMPHASIS_ORDER = ("reduced", "none", "moderate", "strong")


@dataclass(frozen=True)
class Block:
    start: int
    """Offset of the block in the document's text."""
    end: int
    """Offset just past the block."""
    verbatim: tuple[Span, ...] = ()
    """Spans said as rendered (say-as, sub): the lexicon and the normaliser leave them alone."""
    language: str | None = None
    """Model language name from `<lang>` / `<speak xml:lang>`; None: the announcement's."""
    voice: str | None = None
    rate: float = 1.0
    chime: str | None = None
    silence_before_ms: int = 0
    silence_after_ms: int = 0
    emphasis: tuple[tuple[int, int, str], ...] = ()
    """(start, end, level) of each `<emphasis>` in the block."""

    def emphasis_in(self, start: int, end: int) -> str | None:
        """The strongest emphasis level of any emphasised text within [start, end)."""
        levels = [level for a, b, level in self.emphasis if a < end and b > start]
        return max(levels, key=EMPHASIS_ORDER.index) if levels else None


@dataclass(frozen=True)
class Run:
    """Text with the marks it was written under, as the parser meets it."""

    text: str
    language: str | None
    voice: str | None
    rate: float
    verbatim: bool = False
    emphasis: str | None = None


@dataclass(frozen=True)
class Boundary:
    silence_ms: int = 0


@dataclass(frozen=True)
class Chime:
    name: str


@dataclass
class SSMLDocument:
    blocks: list[Block] = field(default_factory=list)
    text: str = ""
    warnings: list[str] = field(default_factory=list)


def assemble(items: list[Run | Boundary | Chime], warnings: list[str]) -> SSMLDocument:
    """Runs, boundaries and chimes in document order -> blocks over one joined text."""
    builder = _Builder()
    for item in items:
        if isinstance(item, Run):
            builder.add_run(item)
        elif isinstance(item, Boundary):
            builder.boundary(item.silence_ms)
        else:
            builder.chime(item.name)
    builder.flush()
    if builder.pending_ms:  # breaks and nothing else: one silent block
        builder.blocks.append(Block(0, 0, silence_before_ms=builder.pending_ms))
    return SSMLDocument(builder.blocks, "".join(builder.text), warnings)


class _Builder:
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.text: list[str] = []
        self.length = 0
        self.runs: list[tuple[int, int, Run]] = []  # the open block's runs with their offsets
        self.pending_ms = 0  # silence waiting for the next block

    def add_run(self, run: Run) -> None:
        if self.runs and _marks(self.runs[-1][2]) != _marks(run):
            self.flush()
        start = self._append(run.text)
        self.runs.append((start, self.length, run))

    def boundary(self, silence_ms: int) -> None:
        self.flush()
        if silence_ms and self.blocks:  # silence after what was said (or played) last
            last = self.blocks[-1]
            self.blocks[-1] = replace(last, silence_after_ms=last.silence_after_ms + silence_ms)
        else:  # a break before anything: silence before the first block
            self.pending_ms += silence_ms

    def chime(self, name: str) -> None:
        self.flush()
        self._separate()
        self.blocks.append(
            Block(self.length, self.length, chime=name, silence_before_ms=self._take_pending())
        )

    def flush(self) -> None:
        if not self._has_text():
            self.runs = []
            return
        start, end = self.runs[0][0], self.runs[-1][1]
        first = self.runs[0][2]
        self.blocks.append(
            Block(
                start,
                end,
                verbatim=tuple((a, b) for a, b, run in self.runs if run.verbatim),
                language=first.language,
                voice=first.voice,
                rate=first.rate,
                silence_before_ms=self._take_pending(),
                emphasis=tuple((a, b, run.emphasis) for a, b, run in self.runs if run.emphasis),
            )
        )
        self.runs = []

    def _has_text(self) -> bool:
        return any(run.text.strip() for _, _, run in self.runs)

    def _append(self, text: str) -> int:
        if not self.runs:
            self._separate()
        start = self.length
        self.text.append(text)
        self.length += len(text)
        return start

    def _separate(self) -> None:
        if self.length:  # blocks are joined with a newline, so no two blocks' words run together
            self.text.append("\n")
            self.length += 1

    def _take_pending(self) -> int:
        pending, self.pending_ms = self.pending_ms, 0
        return pending


def _marks(run: Run) -> tuple:
    return run.language, run.voice, run.rate
