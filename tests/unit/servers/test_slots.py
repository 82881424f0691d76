"""The synthesis slots and the short queue in front of them (servers/slots.py), on a real event loop."""

from __future__ import annotations

import asyncio

import pytest

from qwen3tts.servers.slots import NoSlot, Slots


def run(coro):
    return asyncio.run(coro)


def test_take_refuses_once_every_slot_is_held_and_release_frees_one():
    slots = Slots(2)
    slots.take()
    slots.take()
    with pytest.raises(NoSlot, match="2 network requests"):
        slots.take()
    slots.release()
    slots.take()
    assert slots.held == 2


def test_a_waiter_gets_the_next_freed_slot_before_anyone_who_arrives_later():
    async def scenario():
        slots = Slots(1, max_waiting=2)
        slots.take()
        first = asyncio.create_task(slots.wait(10))
        second = asyncio.create_task(slots.wait(10))
        while slots.waiting < 2:
            await asyncio.sleep(0)
        slots.release()  # promised to the first waiter: a newcomer cannot take it
        with pytest.raises(NoSlot):
            slots.take()
        await first
        assert not second.done() and slots.held == 1
        slots.release()
        await second
        slots.release()
        return slots.held, slots.free

    assert run(scenario()) == (0, True)


def test_a_full_queue_and_a_wait_that_runs_out_are_refused():
    async def scenario():
        slots = Slots(1, max_waiting=1)
        slots.take()
        waiting = asyncio.create_task(slots.wait(0.05))
        while not slots.waiting:
            await asyncio.sleep(0)
        with pytest.raises(NoSlot, match="1 waiting"):
            await slots.wait(10)
        with pytest.raises(NoSlot, match=r"within 0\.05 s"):
            await waiting
        return slots.held, slots.waiting

    assert run(scenario()) == (1, 0)


def test_a_waiter_cancelled_as_its_slot_arrives_passes_the_slot_on():
    async def scenario():
        slots = Slots(1, max_waiting=2)
        slots.take()
        first = asyncio.create_task(slots.wait(10))
        second = asyncio.create_task(slots.wait(10))
        while slots.waiting < 2:
            await asyncio.sleep(0)
        slots.release()  # the first is promised the slot ...
        first.cancel()  # ... and gives up before it runs again
        with pytest.raises(asyncio.CancelledError):
            await first
        await asyncio.wait_for(second, 5)  # the slot went on to the second: none is lost
        return slots.held

    assert run(scenario()) == 1


def test_no_queue_means_wait_refuses_at_once():
    async def scenario():
        slots = Slots(1)
        slots.take()
        with pytest.raises(NoSlot):
            await slots.wait(10)

    run(scenario())
