"""When the daemon gives freed heap memory back (service/memory_trim.py): after an idle interval, or a
longer one while busy; and a real malloc_trim returns what a burst of allocations left behind."""

from __future__ import annotations

from pathlib import Path

from qwen3tts.service.memory_trim import BUSY_INTERVAL_S, IDLE_INTERVAL_S, MemoryTrim, glibc_malloc_trim


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_it_trims_when_idle_after_the_idle_interval_and_while_busy_only_after_the_longer_one():
    clock, calls = Clock(), []
    memory = MemoryTrim(trim=lambda pad: calls.append(pad) or 1, clock=clock)
    clock.now = IDLE_INTERVAL_S - 1
    assert not memory.maybe_trim(idle=True)
    clock.now = IDLE_INTERVAL_S
    assert not memory.maybe_trim(idle=False)  # busy: not yet
    assert memory.maybe_trim(idle=True) and calls == [0]
    assert not memory.maybe_trim(idle=True)  # just trimmed
    clock.now += BUSY_INTERVAL_S
    assert memory.maybe_trim(idle=False) and memory.trims == 2


def test_glibc_malloc_trim_gives_back_what_a_burst_of_small_allocations_left():
    trim = glibc_malloc_trim()
    assert trim is not None  # Debian's glibc; a musl build would get None and never trim

    def rss_kib() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    burst = [bytes(1000) + bytes([n % 256]) for n in range(100_000)]  # ~100 MB from malloc (> 512 B)
    keep = burst[::1000]  # survivors scattered through the heap: glibc keeps the freed pages between
    del burst
    before = rss_kib()
    trim(0)
    after = rss_kib()
    assert before - after > 20_000, (before, after)  # tens of MB back
    assert len(keep) == 100
