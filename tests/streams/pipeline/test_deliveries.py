"""A record delivered again to the process handling it is handled once."""

from __future__ import annotations

import asyncio

import pytest

from streams.pipeline.deliveries import Deliveries

pytestmark = pytest.mark.unit


def test_a_record_handled_here_is_skipped_when_delivered_again() -> None:
    async def run() -> list[bool]:
        deliveries = Deliveries()
        first = await deliveries.claim(2, 21)
        deliveries.release(2, 21, handled=True)
        return [first, await deliveries.claim(2, 21), await deliveries.claim(3, 21)]

    assert asyncio.run(run()) == [True, False, True]


def test_a_second_delivery_waits_for_the_first_then_is_skipped() -> None:
    async def run() -> list[str]:
        deliveries = Deliveries()
        events: list[str] = []

        async def deliver(name: str, seconds: float) -> None:
            if await deliveries.claim(0, 7):
                events.append(f"{name} handles")
                await asyncio.sleep(seconds)
                events.append(f"{name} done")
                deliveries.release(0, 7, handled=True)
            else:
                events.append(f"{name} skipped")

        await asyncio.gather(deliver("first", 0.05), deliver("again", 0.0))
        return events

    assert asyncio.run(run()) == ["first handles", "first done", "again skipped"]


def test_a_delivery_whose_first_run_was_cancelled_runs() -> None:
    async def run() -> list[bool]:
        deliveries = Deliveries()
        assert await deliveries.claim(1, 5)
        waiting = asyncio.create_task(deliveries.claim(1, 5))
        await asyncio.sleep(0.01)
        assert not waiting.done()  # the first is under way
        deliveries.release(1, 5, handled=False)
        again = await waiting
        deliveries.release(1, 5, handled=True)
        return [again, await deliveries.claim(1, 5)]

    assert asyncio.run(run()) == [True, False]


def test_a_cancelled_waiter_leaves_the_first_delivery_alone() -> None:
    async def run() -> bool:
        deliveries = Deliveries()
        assert await deliveries.claim(0, 1)
        waiting = asyncio.create_task(deliveries.claim(0, 1))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        deliveries.release(0, 1, handled=True)  # the first's future was not cancelled
        return await deliveries.claim(0, 1)

    assert asyncio.run(run()) is False


def test_only_the_last_handled_records_are_remembered() -> None:
    async def run() -> list[bool]:
        deliveries = Deliveries(remembered=2)
        for offset in range(3):
            assert await deliveries.claim(0, offset)
            deliveries.release(0, offset, handled=True)
        return [await deliveries.claim(0, offset) for offset in (2, 1, 0)]

    # offset 0 was forgotten: a delivery of it again is handled (at least once)
    assert asyncio.run(run()) == [False, False, True]
    with pytest.raises(ValueError):
        Deliveries(remembered=0)


def test_records_of_one_key_take_turns_and_others_do_not_wait() -> None:
    from streams.pipeline.deliveries import KeyTurns

    async def run() -> list[str]:
        turns, events = KeyTurns(), []

        async def handle(key: bytes | None, name: str) -> None:
            async with turns.turn(key):
                events.append(f"{name} in")
                await asyncio.sleep(0.02)
                events.append(f"{name} out")

        await asyncio.gather(handle(b"k", "first"), handle(b"k", "second"), handle(None, "none"))
        assert len(turns) == 0
        return events

    events = asyncio.run(run())
    assert events.index("first out") < events.index("second in")
    assert events.index("none in") < events.index("first out")  # a keyless record is not held
