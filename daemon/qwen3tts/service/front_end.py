"""The text front end the daemon's doors share: the lexicon, the languages, and where `prepare` runs."""

from __future__ import annotations

from qwen3tts.settings import TextSettings
from qwen3tts.synthesis import TextOptions
from qwen3tts.text import reload_lexicon, warm_up
from qwen3tts.text.guard import GuardedFrontEnd


def text_front_end(
    text: TextSettings, languages, streams_here: bool = False
) -> tuple[TextOptions, GuardedFrontEnd | None]:
    """The TextOptions every door reads with, and the guarded worker processes behind them (None when
    `text.front_end_timeout_s` is 0: `prepare` runs in the caller's thread, unguarded).

    `streams_here`: a door splits streamed text into sentences in the daemon itself (Wyoming's
    synthesize-chunk). The language detector (about 90 MB and most of a second to build) is built in
    the daemon only where text is read there, so that the first `auto` text does not wait for it;
    otherwise only the workers hold one."""
    options = TextOptions(text.normalize, reload_lexicon(text.lexicon, None), tuple(languages))
    if text.front_end_timeout_s <= 0 or streams_here:
        warm_up(languages)
    if text.front_end_timeout_s <= 0:
        return options, None
    # where a stalled match can be abandoned (text/guard.py): started warm, before the first request
    guard = GuardedFrontEnd(text.front_end_timeout_s, languages, text.front_end_workers).start()
    options.front_end = guard
    return options, guard
