"""The shared deadline table behind the upstream header clock (R-FT-1).

Each test waits on something that never happens (an Event nobody sets), bounded only by the
deadline under test, with an outer `asyncio.timeout` so a broken table fails fast instead of
hanging. Times are measured on the loop's own clock.
"""

from __future__ import annotations

import asyncio

import pytest

from sublane_desktop.proxy.deadlines import deadlines

GUARD = 5.0  # the outer bound: far beyond every deadline used here


async def _wait_forever() -> None:
    await asyncio.Event().wait()


async def _watched_for(delay: float) -> tuple[float, asyncio.Timeout]:
    """Enter a watched Timeout, wait for nothing, return how long until it expired."""
    table = deadlines()
    start = table.time()
    waiting = asyncio.timeout(None)
    with pytest.raises(TimeoutError):
        async with waiting:
            table.set(waiting, start + delay)
            try:
                await _wait_forever()
            finally:
                table.drop(waiting)
    return table.time() - start, waiting


async def test_a_request_past_its_deadline_ends_in_a_timeout_error_then():
    async with asyncio.timeout(GUARD):
        elapsed, waiting = await _watched_for(0.05)
    assert waiting.expired()
    assert 0.05 - 0.002 <= elapsed < 1.0
    assert len(deadlines()) == 0


async def test_a_deadline_moved_earlier_is_kept_at_once():
    """The header clock starts at connect: a far first deadline moved near must not wait
    for the far one (the table's timer is re-armed)."""
    table = deadlines()
    start = table.time()
    waiting = asyncio.timeout(None)
    async with asyncio.timeout(GUARD):
        with pytest.raises(TimeoutError):
            async with waiting:
                table.set(waiting, start + 60)
                table.set(waiting, start + 0.05)
                try:
                    await _wait_forever()
                finally:
                    table.drop(waiting)
    assert table.time() - start < 1.0


async def test_a_later_deadline_is_not_cut_short_by_an_earlier_request_that_ended():
    table = deadlines()
    start = table.time()
    early = asyncio.timeout(None)
    async with early:
        table.set(early, start + 0.03)
        table.drop(early)  # answered in time: leaves the table, the timer stays armed
    async with asyncio.timeout(GUARD):
        elapsed, waiting = await _watched_for(0.2)
    assert waiting.expired()
    assert elapsed >= 0.2 - 0.002
    assert not early.expired()


async def test_requests_expire_in_their_own_order_each_at_its_own_deadline():
    table = deadlines()
    start = table.time()
    ended: dict[str, float] = {}

    async def request(name: str, delay: float) -> None:
        try:
            await _watched_for(delay)
        finally:
            ended[name] = table.time() - start

    async with asyncio.timeout(GUARD):
        await asyncio.gather(request("slow", 0.25), request("fast", 0.05), request("mid", 0.12))
    assert sorted(ended, key=ended.__getitem__) == ["fast", "mid", "slow"]
    assert ended["fast"] < 0.12 <= ended["mid"] + 0.002
    assert ended["slow"] >= 0.25 - 0.002


async def test_a_request_that_ended_in_time_is_never_cancelled_later():
    table = deadlines()
    waiting = asyncio.timeout(None)
    async with waiting:
        table.set(waiting, table.time() + 0.03)
        table.drop(waiting)
    # Outlive the old deadline under another watched Timeout; this task must see only that
    # one's expiry, not a stray cancellation meant for the first.
    async with asyncio.timeout(GUARD):
        await _watched_for(0.1)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    assert not waiting.expired()


async def test_each_event_loop_has_its_own_table():
    here = deadlines()
    assert deadlines() is here

    def other_loop() -> object:
        async def look() -> object:
            return deadlines()

        return asyncio.run(look())

    there = await asyncio.to_thread(other_loop)
    assert there is not here
    assert deadlines() is here
