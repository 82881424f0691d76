"""The network requests' synthesis slots, and the short queue a Wyoming request waits in for one.

At most `size` requests hold a slot. A request that finds them all taken is refused at once (`take`:
HTTP's 429, whose clients retry by themselves), or waits its turn (`wait`: Wyoming, whose clients —
Home Assistant — give up on the first `busy`), in arrival order, at most `max_waiting` of them at a time
and each for at most the time it is given; past either it is refused. A slot freed while someone waits
is promised to the first waiter, so a request arriving meanwhile cannot take it first. Lives on the
servers' event loop (no locks).
"""

from __future__ import annotations

import asyncio
from collections import deque


class NoSlot(Exception):
    """No slot now (take), or none within the wait or room to wait (wait); the message says which."""


class Slots:
    def __init__(self, size: int, max_waiting: int = 0):
        self.size = size
        self.max_waiting = max_waiting
        self.held = 0
        self._waiters: deque[asyncio.Future] = deque()

    @property
    def free(self) -> bool:
        """Whether `take` would succeed now."""
        return self.held < self.size and not self.waiting

    @property
    def waiting(self) -> int:
        return sum(1 for waiter in self._waiters if not waiter.done())

    def take(self) -> None:
        """A slot now, or NoSlot (a slot promised to a waiter is not free)."""
        if not self.free:
            raise NoSlot(f"{self.size} network requests are already synthesising")
        self.held += 1

    async def wait(self, timeout_s: float) -> None:
        """A slot, now or once one is free within `timeout_s`; NoSlot if the queue is full or time ran out."""
        try:
            return self.take()
        except NoSlot:
            if self.waiting >= self.max_waiting:
                raise NoSlot(f"{self.size} network requests are synthesising and {self.max_waiting} "
                             f"waiting") from None  # fmt: skip
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:  # asyncio.wait, not wait_for: on 3.11 wait_for may swallow a cancel that meets the slot
            await asyncio.wait([waiter], timeout=timeout_s)
        except asyncio.CancelledError:
            self._give_up(waiter)
            raise
        if not waiter.done():
            self._give_up(waiter)
            raise NoSlot(f"no synthesis slot came free within {timeout_s:g} s")

    def _give_up(self, waiter: asyncio.Future) -> None:
        if waiter.done() and not waiter.cancelled():  # promised a slot just as it gave up: pass it on
            self.release()
        waiter.cancel()
        if waiter in self._waiters:
            self._waiters.remove(waiter)

    def release(self) -> None:
        """Give a slot back: to the first waiter, else to the pool."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot changes hands: `held` stays
                return
        self.held -= 1
