"""Where the daemon builds its own language detector (service/front_end.py): only where text is read in
the daemon itself, never beside guarded workers that hold their own."""

from __future__ import annotations

import pytest

from qwen3tts.service import front_end
from qwen3tts.settings import TextSettings


class FakeGuard:
    def __init__(self, timeout_s, languages, workers):
        self.languages = languages

    def start(self):
        return self


@pytest.fixture
def warmed(monkeypatch) -> list:
    calls: list = []
    monkeypatch.setattr(front_end, "warm_up", lambda languages: calls.append(tuple(languages)))
    monkeypatch.setattr(front_end, "GuardedFrontEnd", FakeGuard)
    return calls


@pytest.mark.parametrize(
    ("timeout_s", "streams_here", "builds_here", "guarded"),
    [(2.0, False, False, True), (2.0, True, True, True), (0.0, False, True, False)],
    ids=["guarded workers only", "wyoming streams in the daemon", "unguarded"],
)
def test_the_daemon_builds_a_detector_only_where_it_reads_text(warmed, timeout_s, streams_here, builds_here,
                                                               guarded):  # fmt: skip
    settings = TextSettings(front_end_timeout_s=timeout_s)
    options, guard = front_end.text_front_end(settings, ("english", "german"), streams_here=streams_here)
    assert warmed == ([("english", "german")] if builds_here else [])
    assert (guard is not None) == guarded
    assert options.languages == ("english", "german")
    if guarded:
        assert options.front_end is guard
