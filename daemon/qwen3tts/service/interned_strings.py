"""Take CPython's interned-strings table to its lasting size at start, not ten minutes into service.

CPython keeps every interned string in one dict: the names the daemon's imports bring (about 50,000),
and every path component, since pathlib interns each part of each `Path` it parses. A name made anew
again and again (a request's spool or WAV file, a sensor's attribute at each read) takes a slot each
time, and a freed one keeps its slot until the dict is rebuilt; the dict is rebuilt when its slots run
out, at three slots per live string rounded up to a power of two: 2^18 slots (3.7 MB) for the daemon's,
where the imports had filled one of 2^17. The daemon's own repeated names are `str`, never parsed by
pathlib (tests/unit/appliance/test_interned_names.py), and a soak sees one new slot taken per hundred
requests or so; but any such churn left (a library's, a new code path's) would bring that rebuild
some time into service, as a step of RSS read as growth (docs/benchmarks.md, issue 37). Interning and
dropping more new strings than a 2^17 table has slots does it while the daemon starts, before READY=1,
for about 1.8 MB held from the start.
"""

from __future__ import annotations

import sys

# more than the usable slots of a 2^17 table (two thirds of it, 87,381): enough to run it out from empty
CHURN = 100_000


def settle_interned_strings(churn: int = CHURN) -> None:
    """Intern `churn` strings no one else holds, each freed at once (about 30 ms)."""
    for n in range(churn):
        sys.intern(f"qwen3tts settling interned strings {n}")
