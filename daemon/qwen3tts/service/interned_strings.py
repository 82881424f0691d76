"""Take CPython's interned-strings table to its lasting size at start, not ten minutes into service.

CPython keeps every interned string in one dict: the names the daemon's imports bring (about 50,000),
and every path component, since pathlib interns each part of each `Path` it parses. Per request a few
new ones come and go (the spool file, its temporary, the WAV file); each takes a slot, and a freed one
keeps its slot until the dict is rebuilt. The dict is rebuilt when its slots run out, at three slots per
live string rounded up to a power of two: 2^18 slots (3.7 MB) for the daemon's, where the imports had
filled one of 2^17. In a soak (docs/benchmarks.md) that rebuild came about 2600 requests in, once, as a
step of RSS read as growth. Interning and dropping more new strings than a 2^17 table has slots does the
rebuild while the daemon starts, before READY=1; the rebuilds that follow are at the same size.
"""

from __future__ import annotations

import sys

# more than the usable slots of a 2^17 table (two thirds of it, 87,381): enough to run it out from empty
CHURN = 100_000


def settle_interned_strings(churn: int = CHURN) -> None:
    """Intern `churn` strings no one else holds, each freed at once (about 30 ms)."""
    for n in range(churn):
        sys.intern(f"qwen3tts settling interned strings {n}")
