"""The hostile matrix's bookkeeping (scripts/hostile_matrix.py): how many ends each request got, and one
row's verdict from them.

An MQTT request ends once: an announcement with `finished` (not one that `repeats later`), `cancelled`,
`expired`, `rejected` or `error`; a command with its answer (docs/mqtt.md, "Events and answers"). A
network request ends with its response. The counting is kept apart from the live daemon so that a
verdict can be shown to fail on made-up event lists (tests/unit/bench/test_matrix_tally.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

ANNOUNCEMENT_ENDS = frozenset({"finished", "cancelled", "expired", "rejected", "error"})
COMMAND_ANSWERS = frozenset({"stopped", "not_found", "volume_set", "voice_set"})
REPEATS_LATER = "repeats later"


def is_end(event: Mapping) -> bool:
    """Whether `event` ends its request: a `finished` that announces another round does not."""
    name = event.get("event")
    if name == "finished" and event.get("reason") == REPEATS_LATER:
        return False
    return name in ANNOUNCEMENT_ENDS or name in COMMAND_ANSWERS


def count_ends(events: Iterable[Mapping]) -> int:
    return sum(1 for event in events if is_end(event))


@dataclass
class Row:
    """One row of the matrix: what was sent, how it was answered, and whatever else went wrong."""

    name: str
    sent: int = 0
    answered: int = 0
    lost: int = 0
    doubled: int = 0
    silent: int = 0
    """Requests the contract lets go unanswered (a say repeating an id already accepted)."""
    tracebacks: int = 0
    failures: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    details: list = field(default_factory=list)
    """Per request, for the JSON summary only (too long to print)."""

    @property
    def clean(self) -> bool:
        return not (self.lost or self.doubled or self.tracebacks or self.failures)

    def line(self) -> str:
        verdict = "clean" if self.clean else "NOT CLEAN"
        silent = f"  silent {self.silent}" if self.silent else ""
        return (
            f"{self.name:<14} sent {self.sent:5d}  answered {self.answered:5d}  lost {self.lost}"
            f"  doubled {self.doubled}{silent}  tracebacks {self.tracebacks}  {verdict}"
        )

    def to_json(self) -> dict:
        return {
            "row": self.name, "sent": self.sent, "answered": self.answered, "lost": self.lost,
            "doubled": self.doubled, "silent": self.silent, "tracebacks": self.tracebacks,
            "clean": self.clean, "failures": self.failures[:50], "figures": self.figures,
            "details": self.details,
        }  # fmt: skip


def tally(name: str, keys: Iterable[str], ends: Mapping[str, int], may_be_silent: Iterable[str] = ()) -> Row:
    """A row from the ends each key got: one is answered, none is lost (unless the key may be silent),
    more than one is doubled. Keys are counted once, however often they were listed."""
    row, silent_ok = Row(name), set(may_be_silent)
    for key in dict.fromkeys(keys):
        row.sent += 1
        got = ends.get(key, 0)
        if got == 1:
            row.answered += 1
        elif got == 0 and key in silent_ok:
            row.silent += 1
        elif got == 0:
            row.lost += 1
            if row.lost <= 10:
                row.failures.append(f"{key}: no end")
        else:
            row.doubled += 1
            row.failures.append(f"{key}: {got} ends")
    return row


def ends_by_key(events_by_key: Mapping[str, Iterable[Mapping]]) -> dict[str, int]:
    return {key: count_ends(events) for key, events in events_by_key.items()}
