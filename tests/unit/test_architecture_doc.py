"""docs/architecture.md names files a reader can open: every path it mentions exists in the tree."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "daemon" / "qwen3tts"
PATH = re.compile(r"(?<![\w/.-])((?:[a-z_]+/)+[a-z_]+\.py|[a-z_]+\.py)\b")


def named_paths() -> set[str]:
    return set(PATH.findall(DOC.read_text(encoding="utf-8")))


def exists(name: str) -> bool:
    """A path relative to the repository, or to the package (how the document writes most of them)."""
    return (REPO / name).is_file() or (PACKAGE / name).is_file()


def test_the_document_names_the_files_of_the_announcement_path():
    names = named_paths()
    assert {
        "appliance/mqtt/intake.py",
        "appliance/announcements/announcer.py",
        "appliance/audio/track.py",
    } <= names


def test_every_file_the_document_names_exists():
    assert sorted(name for name in named_paths() if not exists(name)) == []


def test_the_checker_notices_a_file_that_does_not_exist():
    assert not exists("appliance/player.py") and not exists("appliance/audio_worker.py")
